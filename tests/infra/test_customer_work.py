"""Template assertions for customers' work: the jobs function that runs their job package (its asset, layer,
environment and role), and the IAM of Lambda targets and of the worker's invoke of the jobs function."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template

from infra.footprint import BUDGET, component_kinds
from infra.synth import Synthesized, synth
from shared import settings


def _invoke_statements(template: Template, effect: str = "Allow") -> list[dict]:
    statements = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "lambda:InvokeFunction" in str(statement["Action"]) and statement["Effect"] == effect:
                statements.append(statement | {"_roles": policy["Properties"]["Roles"]})
    return statements


def _arn(name: str) -> dict:
    return {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":lambda:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                f":function:{name}",
            ],
        ]
    }


def test_without_lambda_targets_nothing_may_be_invoked(aws_template: Template):
    assert _invoke_statements(aws_template) == []


def _function_id(template: Template, name: str) -> str:
    (logical_id,) = template.find_resources("AWS::Lambda::Function", {"Properties": {"FunctionName": name}})
    return logical_id


def _jobs_function_arn(template: Template) -> dict:
    return {"Fn::GetAtt": [_function_id(template, settings.JOBS_FUNCTION), "Arn"]}


def test_the_worker_may_invoke_exactly_the_allowed_targets_and_the_jobs_function(with_jobs: Synthesized):
    template = Template.from_json(with_jobs.template)
    (statement,) = _invoke_statements(template)  # CDK merges the Allows of one action into one statement
    assert statement["Action"] == "lambda:InvokeFunction"
    assert statement["Effect"] == "Allow"
    etl = "arn:aws:lambda:eu-west-1:123456789012:function:etl"
    # The jobs function by its exact ARN, unqualified.
    expected = [_arn("reports-*"), _arn("reports-*:*"), etl, f"{etl}:*", _jobs_function_arn(template)]
    assert sorted(map(json.dumps, statement["Resource"])) == sorted(map(json.dumps, expected))
    worker = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"FunctionName": settings.WORKER_FUNCTION}}
    )
    (worker_role,) = [f["Properties"]["Role"]["Fn::GetAtt"][0] for f in worker.values()]
    assert statement["_roles"] == [{"Ref": worker_role}]
    assert with_jobs.nag_findings == []


def test_the_worker_is_denied_corrals_own_functions(with_jobs: Synthesized):
    template = Template.from_json(with_jobs.template)
    (allowed,) = _invoke_statements(template)
    (denied,) = _invoke_statements(template, effect="Deny")
    assert denied["Action"] == "lambda:InvokeFunction"
    expected = [
        _arn(settings.API_FUNCTION),
        _arn(f"{settings.API_FUNCTION}:*"),
        _arn(settings.WORKER_FUNCTION),
        _arn(f"{settings.WORKER_FUNCTION}:*"),
        _arn("corral-*-*"),  # the functions CloudFormation names: <stack>-<logical id>-<suffix>
        _arn(f"{settings.JOBS_FUNCTION}:*"),  # the worker invokes the jobs function unqualified only
    ]
    assert sorted(map(json.dumps, denied["Resource"])) == sorted(map(json.dumps, expected))
    assert denied["_roles"] == allowed["_roles"]


# What IAM decides, worked out from the template: the Allow and Deny statements' ARNs as IAM patterns.
_ACCOUNT = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"}


def _rendered(resource: object, template: Template) -> str:
    """A statement's resource as the ARN (or ARN pattern) it stands for in the stack's account."""
    if isinstance(resource, str):
        return resource
    assert isinstance(resource, dict)
    if "Ref" in resource:
        return _ACCOUNT[resource["Ref"]]
    if "Fn::GetAtt" in resource:  # a function's ARN
        logical_id, _ = resource["Fn::GetAtt"]
        return _function_arn_named(_name_of(template, logical_id))
    separator, parts = resource["Fn::Join"]
    return separator.join(_rendered(part, template) for part in parts)


def _function_arn_named(name: str) -> str:
    return f"arn:aws:lambda:us-east-1:123456789012:function:{name}"


def _name_of(template: Template, logical_id: str) -> str:
    """A function's name: its own, or the one CloudFormation gives it (`<stack>-<logical id>-<suffix>`)."""
    properties = template.to_json()["Resources"][logical_id]["Properties"]
    return properties.get("FunctionName") or f"{settings.STACK_NAME}-{logical_id[:40]}-1A2B3C4D5E6F"


def _worker_may_invoke(template: Template, arn: str) -> bool:
    """IAM's answer for the worker's role: some Allow matches, and no Deny does (a Deny always wins)."""
    matches = [
        any(fnmatch.fnmatchcase(arn, _rendered(resource, template)) for resource in _listed(statement["Resource"]))
        for statement in _invoke_statements(template, "Allow")
    ]
    denied = any(
        fnmatch.fnmatchcase(arn, _rendered(resource, template))
        for statement in _invoke_statements(template, "Deny")
        for resource in _listed(statement["Resource"])
    )
    return any(matches) and not denied


def _listed(resources: object) -> list:
    return resources if isinstance(resources, list) else [resources]


def test_the_worker_may_invoke_the_jobs_function_and_no_other_function_of_corrals(with_jobs: Synthesized):
    template = Template.from_json(with_jobs.template)
    functions = template.find_resources("AWS::Lambda::Function")
    names = {logical_id: _name_of(template, logical_id) for logical_id in functions}
    # A function CloudFormation names, as a custom resource's would be: the Deny must reach it too.
    names["SomeCustomResourceProvider"] = f"{settings.STACK_NAME}-SomeCustomResourceProvider-1A2B3C4D5E6F"
    assert settings.JOBS_FUNCTION in names.values()
    for name in names.values():
        arn = _function_arn_named(name)
        assert _worker_may_invoke(template, arn) is (name == settings.JOBS_FUNCTION), name
        assert not _worker_may_invoke(template, f"{arn}:live"), name  # no version or alias of any
    assert _worker_may_invoke(template, _function_arn_named("reports-daily"))  # the allowed targets still are


def test_the_api_and_the_worker_know_the_allowlist_and_the_jobs_function_but_hold_no_customer_code(
    with_jobs: Synthesized,
):
    template = Template.from_json(with_jobs.template)
    (platform_layer,) = template.find_resources(
        "AWS::Lambda::LayerVersion", {"Properties": {"Description": Match.string_like_regexp("corral's pinned")}}
    )
    for name in (settings.API_FUNCTION, settings.WORKER_FUNCTION):
        properties = template.to_json()["Resources"][_function_id(template, name)]["Properties"]
        environment = properties["Environment"]["Variables"]
        assert environment["CORRAL_JOBS_PACKAGE"] == ""  # the aws profile's worker imports no job package
        assert environment["CORRAL_JOBS_FUNCTION"] == settings.JOBS_FUNCTION
        assert json.loads(environment["CORRAL_LAMBDA_TARGETS"]) == [
            "reports-*=acme|globex",
            "arn:aws:lambda:eu-west-1:123456789012:function:etl=*",
            "reports-*=initech",
        ]
        assert properties["Layers"] == [{"Ref": platform_layer}]  # not the customer's requirements
        asset = _asset(with_jobs, properties)
        assert not (asset / "jobs").exists()  # the customer's package is not in their code
        assert "render_email" in {entry["name"] for entry in json.loads((asset / "job_types.json").read_text())}


def test_the_jobs_function_holds_the_customers_package_its_layer_and_nothing_of_the_stacks(with_jobs: Synthesized):
    template = Template.from_json(with_jobs.template)
    properties = template.to_json()["Resources"][_function_id(template, settings.JOBS_FUNCTION)]["Properties"]
    assert properties["Handler"] == "functions.jobs.handler.handler"
    layers = template.find_resources("AWS::Lambda::LayerVersion")
    assert sorted(ref["Ref"] for ref in properties["Layers"]) == sorted(layers)  # the platform's and the package's
    environment = properties["Environment"]["Variables"]
    corral = {name: value for name, value in environment.items() if name.startswith("CORRAL_")}
    assert corral == {"CORRAL_JOBS_PACKAGE": "jobs"}  # no table, queue, cache, target list or secret's name
    asset = _asset(with_jobs, properties)
    assert (asset / "jobs" / "emails.py").is_file()
    assert (asset / "functions" / "jobs" / "handler.py").is_file()
    assert not (asset / "functions" / "worker").exists() and not (asset / "functions" / "api").exists()


def test_the_jobs_functions_role_writes_its_log_group_and_nothing_else(with_jobs: Synthesized):
    template = Template.from_json(with_jobs.template)
    function = template.to_json()["Resources"][_function_id(template, settings.JOBS_FUNCTION)]
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    policies = template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": Match.array_with([{"Ref": role_id}])}}
    )
    statements = [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]
    (logs,) = statements  # not even X-Ray's writes: the customer's code is not traced
    assert sorted(logs["Action"]) == ["logs:CreateLogStream", "logs:PutLogEvents"]
    assert logs["Resource"] == {"Fn::GetAtt": [function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"], "Arn"]}
    granted = json.dumps(statements)
    for service in ("dynamodb:", "dax:", "sqs:", "lambda:", "scheduler:", "iam:", "secretsmanager:", "kms:", "xray:"):
        assert service not in granted, service
    # The network interfaces Lambda makes to put it in the VPC, which its own code may not make, in the
    # role's one managed policy: no AWS-managed execution policy (every log group of the account).
    role = template.to_json()["Resources"][role_id]["Properties"]
    ((network_id,),) = [reference.values() for reference in role["ManagedPolicyArns"]]
    network = template.to_json()["Resources"][network_id]
    assert network["Type"] == "AWS::IAM::ManagedPolicy"
    actions = {a for s in network["Properties"]["PolicyDocument"]["Statement"] for a in _actions(s)}
    assert actions <= {
        "ec2:CreateNetworkInterface",
        "ec2:DeleteNetworkInterface",
        "ec2:AssignPrivateIpAddresses",
        "ec2:UnassignPrivateIpAddresses",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSubnets",
    }


def test_the_jobs_function_runs_in_the_vpc_in_a_group_dax_does_not_admit(with_jobs: Synthesized):
    template = Template.from_json(with_jobs.template)
    resources = template.to_json()["Resources"]
    jobs = resources[_function_id(template, settings.JOBS_FUNCTION)]["Properties"]["VpcConfig"]
    worker = resources[_function_id(template, settings.WORKER_FUNCTION)]["Properties"]["VpcConfig"]
    # Subnets of its own, out through the same NATs (the stack's EgressIps): test_iac_findings.py, R15.
    assert not set(map(json.dumps, jobs["SubnetIds"])) & set(map(json.dumps, worker["SubnetIds"]))
    (jobs_group,) = [group["Fn::GetAtt"][0] for group in jobs["SecurityGroupIds"]]
    assert jobs_group not in json.dumps(worker["SecurityGroupIds"])
    ingress = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::EC2::SecurityGroupIngress"]
    admitted = [rule for rule in ingress if jobs_group in json.dumps(rule.get("SourceSecurityGroupId"))]
    assert admitted and all(rule["FromPort"] == 443 for rule in admitted)  # the VPC endpoints, not DAX (9111)


def test_the_jobs_function_adds_no_kind_of_component(with_jobs: Synthesized, synthesized: dict[str, Synthesized]):
    assert set(component_kinds(with_jobs.template)) == set(component_kinds(synthesized["aws"].template))
    assert len(component_kinds(with_jobs.template)) <= BUDGET


def test_the_jobs_functions_own_failures_and_throttles_page_someone(with_jobs: Synthesized):
    template = Template.from_json(with_jobs.template)
    watched = {
        (alarm["Properties"]["MetricName"], json.dumps(alarm["Properties"].get("Dimensions", [])))
        for alarm in template.find_resources("AWS::CloudWatch::Alarm").values()
        if alarm["Properties"]["Namespace"] == "AWS/Lambda"
    }
    jobs_function = json.dumps(
        [{"Name": "FunctionName", "Value": {"Ref": _function_id(template, settings.JOBS_FUNCTION)}}]
    )
    assert {("Errors", jobs_function), ("Throttles", jobs_function)} <= watched


def test_without_a_customers_package_there_is_no_jobs_function(aws_template: Template, local_template: Template):
    for template in (aws_template, local_template):  # local: the chaos tooling alone, which runs in the worker
        assert not template.find_resources(
            "AWS::Lambda::Function", {"Properties": {"FunctionName": settings.JOBS_FUNCTION}}
        )
        for function in template.find_resources(
            "AWS::Lambda::Function", {"Properties": {"Layers": Match.any_value()}}
        ).values():
            assert function["Properties"]["Environment"]["Variables"]["CORRAL_JOBS_FUNCTION"] == ""


def _asset(synthesized: Synthesized, properties: dict) -> Path:
    """The staged folder of a function's code asset."""
    return synthesized.template_path.parent / f"asset.{properties['Code']['S3Key'].removesuffix('.zip')}"


def _actions(statement: dict) -> list[str]:
    return [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]


def test_a_bad_lambda_target_pattern_fails_the_synth(tmp_path: Path):
    with pytest.raises(SystemExit, match="corral:lambda_targets"):
        synth("local", tmp_path, context={"corral:lambda_targets": "arn:aws:s3:::bucket=acme"})


def test_an_entry_without_its_tenants_fails_the_synth(tmp_path: Path):
    with pytest.raises(SystemExit, match=r"name the tenants .* reports-\*=\* for every tenant"):
        synth("local", tmp_path, context={"corral:lambda_targets": "reports-*"})


@pytest.mark.parametrize(
    "pattern", ["*", "corral-*", "corral-worker", settings.JOBS_FUNCTION, "arn:aws:lambda:*:*:function:*"]
)
def test_a_pattern_that_could_match_corrals_own_functions_fails_the_synth(tmp_path: Path, pattern: str):
    with pytest.raises(SystemExit, match=r"corral:lambda_targets: .* could match corral's own functions"):
        synth("local", tmp_path, context={"corral:lambda_targets": json.dumps([f"{pattern}=acme"])})
