"""Template assertions for customers' work: their job package's layer, and the IAM of Lambda targets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template

from infra.synth import Synthesized, synth
from shared import settings

TARGETS = "reports-*=acme|globex,arn:aws:lambda:eu-west-1:123456789012:function:etl=*,reports-*=initech"


@pytest.fixture(scope="module")
def with_jobs(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir: Path = tmp_path_factory.mktemp("cdk-jobs")
    context = {"corral:jobs": "examples/jobs", "corral:lambda_targets": TARGETS}
    return synth("aws", outdir, nag=True, context=context)


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


def test_the_worker_may_invoke_exactly_the_allowed_targets(with_jobs: Synthesized):
    template = Template.from_json(with_jobs.template)
    (statement,) = _invoke_statements(template)
    assert statement["Action"] == "lambda:InvokeFunction"
    assert statement["Effect"] == "Allow"
    etl = "arn:aws:lambda:eu-west-1:123456789012:function:etl"
    expected = [_arn("reports-*"), _arn("reports-*:*"), etl, f"{etl}:*"]
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
        _arn("corral-*"),  # every function of the stack, the ones CloudFormation names too
    ]
    assert sorted(map(json.dumps, denied["Resource"])) == sorted(map(json.dumps, expected))
    assert denied["_roles"] == allowed["_roles"]


def test_both_functions_know_the_allowlist_and_load_the_customers_package(with_jobs: Synthesized):
    template = Template.from_json(with_jobs.template)
    functions = template.find_resources("AWS::Lambda::Function", {"Properties": {"Layers": Match.any_value()}})
    assert len(functions) == 2
    layers = template.find_resources("AWS::Lambda::LayerVersion")
    assert len(layers) == 2  # the platform's requirements, and the job package's own
    for function in functions.values():
        environment = function["Properties"]["Environment"]["Variables"]
        assert environment["CORRAL_JOBS_PACKAGE"] == "jobs"
        assert json.loads(environment["CORRAL_LAMBDA_TARGETS"]) == [
            "reports-*=acme|globex",
            "arn:aws:lambda:eu-west-1:123456789012:function:etl=*",
            "reports-*=initech",
        ]
        assert sorted(ref["Ref"] for ref in function["Properties"]["Layers"]) == sorted(layers)


def test_a_bad_lambda_target_pattern_fails_the_synth(tmp_path: Path):
    with pytest.raises(SystemExit, match="corral:lambda_targets"):
        synth("local", tmp_path, context={"corral:lambda_targets": "arn:aws:s3:::bucket=acme"})


def test_an_entry_without_its_tenants_fails_the_synth(tmp_path: Path):
    with pytest.raises(SystemExit, match=r"name the tenants .* reports-\*=\* for every tenant"):
        synth("local", tmp_path, context={"corral:lambda_targets": "reports-*"})


@pytest.mark.parametrize("pattern", ["*", "corral-*", "corral-worker", "arn:aws:lambda:*:*:function:*"])
def test_a_pattern_that_could_match_corrals_own_functions_fails_the_synth(tmp_path: Path, pattern: str):
    with pytest.raises(SystemExit, match=r"corral:lambda_targets: .* could match corral's own functions"):
        synth("local", tmp_path, context={"corral:lambda_targets": json.dumps([f"{pattern}=acme"])})
