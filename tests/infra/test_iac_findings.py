"""Template assertions for the infrastructure review's findings (docs/decisions/iac-review-findings.md maps
each finding to its fix or decision): deploy order, capacity per stage, table protection on a first
deploy, customer code's network, names, IAM hardening, alarms, teardown, tracing and hygiene."""

from __future__ import annotations

import ipaddress
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from infra import capacity, network
from infra.functions import ENI_ACTIONS, ENI_READS
from infra.synth import Synthesized, synth
from shared import settings
from shared.store import table_schema

ACCOUNT = settings.ACCOUNT_CONCURRENCY


def _resources(template: Template | Synthesized) -> dict[str, dict]:
    if isinstance(template, Synthesized):
        return template.template["Resources"]
    return template.to_json()["Resources"]


def _of_type(resources: dict[str, dict], type_: str) -> dict[str, dict]:
    return {logical_id: r for logical_id, r in resources.items() if r["Type"] == type_}


def _function(resources: dict[str, dict], name: str) -> dict:
    (function,) = [
        f for f in _of_type(resources, "AWS::Lambda::Function").values() if f["Properties"].get("FunctionName") == name
    ]
    return function["Properties"]


def _actions(statement: dict) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else actions


def _references(value: object) -> Iterator[str]:
    """The logical ids a template value refers to (Ref and Fn::GetAtt)."""
    if isinstance(value, dict):
        if "Ref" in value and isinstance(value["Ref"], str):
            yield value["Ref"]
        if "Fn::GetAtt" in value:
            yield value["Fn::GetAtt"][0]
        for item in value.values():
            yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


def _depends_on(resources: dict[str, dict], logical_id: str) -> set[str]:
    """Everything CloudFormation must create before `logical_id`: its DependsOn and references, transitively."""
    seen: set[str] = set()
    waiting = [logical_id]
    while waiting:
        resource = resources[waiting.pop()]
        depends = resource.get("DependsOn", [])
        for found in [*([depends] if isinstance(depends, str) else depends), *_references(resource.get("Properties"))]:
            if found in resources and found not in seen:
                seen.add(found)
                waiting.append(found)
    return seen


def _network_interface_policies(resources: dict[str, dict], role_id: str) -> list[str]:
    """The managed policies that let a role make network interfaces, however they are attached to it."""
    role = resources[role_id]["Properties"]
    attached = {reference.get("Ref") for reference in role.get("ManagedPolicyArns", []) if isinstance(reference, dict)}
    return [
        logical_id
        for logical_id, policy in _of_type(resources, "AWS::IAM::ManagedPolicy").items()
        if (logical_id in attached or {"Ref": role_id} in policy["Properties"].get("Roles", []))
        and any(
            "ec2:CreateNetworkInterface" in _actions(s) and s["Effect"] == "Allow"
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
        )
    ]


def _vpc_functions(resources: dict[str, dict]) -> dict[str, dict]:
    return {k: f for k, f in _of_type(resources, "AWS::Lambda::Function").items() if "VpcConfig" in f["Properties"]}


# R12: deploy order ---------------------------------------------------------------------------------


def test_R12_every_vpc_function_depends_on_its_network_interface_policy(aws_template: Template, with_jobs: Synthesized):
    """Created after it (Lambda refuses a VPC function whose role cannot make interfaces), deleted before it."""
    for template in (aws_template, with_jobs):
        resources = _resources(template)
        functions = _vpc_functions(resources)
        assert len(functions) == (3 if template is with_jobs else 2)
        for logical_id, function in functions.items():
            role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
            (policy,) = _network_interface_policies(resources, role_id)
            assert policy in _depends_on(resources, logical_id), logical_id


# R13 and R16: Lambda concurrency and the API's rate, per stage ---------------------------------------


def _capacity(resources: dict[str, dict], stage: str = "") -> tuple[int, int, int | None, dict]:
    """(API reservation, the worker's most, the jobs function's reservation or None, the poller config)."""
    mappings = [m["Properties"] for m in _of_type(resources, "AWS::Lambda::EventSourceMapping").values()]
    (pollers,) = [m["ProvisionedPollerConfig"] for m in mappings if "ProvisionedPollerConfig" in m]  # the jobs queue
    # The high and low lanes' and the backstop's (docs/decisions/priorities.md).
    bounded = [m["ScalingConfig"]["MaximumConcurrency"] for m in mappings if "ScalingConfig" in m]
    assert len(bounded) == 3
    jobs = [
        f["Properties"].get("ReservedConcurrentExecutions")
        for f in _of_type(resources, "AWS::Lambda::Function").values()
        if str(f["Properties"].get("FunctionName", "")).endswith("jobcode")
    ]
    api = _function(resources, settings.names(stage).api_function)["ReservedConcurrentExecutions"]
    worker_most = pollers["MaximumPollers"] * settings.INVOKES_PER_POLLER + sum(bounded)
    return api, worker_most, (jobs[0] if jobs else None), pollers


def test_R13_the_jobs_function_is_reserved_and_api_worker_and_jobs_fit_the_account_less_100(
    aws_template: Template, with_jobs: Synthesized
):
    api, worker_most, jobs, pollers = _capacity(_resources(with_jobs))
    assert jobs is not None, "the jobs function has no reserved concurrency"
    assert api + worker_most + jobs <= ACCOUNT - settings.LAMBDA_UNRESERVED_MINIMUM
    # Each worker execution runs its batch's jobs at once: the jobs function covers all of them.
    assert jobs >= worker_most * settings.WORKER_BATCH_SIZE
    assert capacity.LEAST_POLLERS <= pollers["MinimumPollers"] <= pollers["MaximumPollers"]
    # Reservations leave Lambda its unreserved 100, which the worker draws from.
    assert ACCOUNT - api - jobs >= settings.LAMBDA_UNRESERVED_MINIMUM + worker_most
    api, worker_most, jobs, _ = _capacity(_resources(aws_template))
    assert jobs is None and api + worker_most <= ACCOUNT - settings.LAMBDA_UNRESERVED_MINIMUM


@pytest.fixture(scope="module")
def small_stage(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """A dev stage in an account whose quota was raised to 2,000, taking 250 of it."""
    context = {
        "corral:stage": "dev",
        "corral:account_concurrency": "2000",
        "corral:concurrency": "250",
        "corral:api_reserved_concurrency": "50",
        "corral:api_throttle_rate": "1000",
        "corral:api_throttle_burst": "500",
    }
    return synth("aws", tmp_path_factory.mktemp("small-stage"), context=context)


def test_R16_a_stage_takes_the_share_of_the_account_its_context_gives_it(small_stage: Synthesized):
    resources = _resources(small_stage)
    api, worker_most, jobs, pollers = _capacity(resources, "dev")
    # 19 pollers' 190 batches split into lanes: 19 high, 19 low, 152 default (15 pollers); and the backstop's 2
    assert (api, worker_most, jobs) == (50, 150 + 19 + 19 + 2, None)
    assert pollers == {"MinimumPollers": 15, "MaximumPollers": 15}  # the minimum never above the maximum
    (stage,) = _of_type(resources, "AWS::ApiGatewayV2::Stage").values()
    throttle = stage["Properties"]["DefaultRouteSettings"]
    assert (throttle["ThrottlingRateLimit"], throttle["ThrottlingBurstLimit"]) == (1000, 500)
    # The account-wide alarm follows the quota the stage was told of (R19).
    (claimed,) = [
        a
        for a in _of_type(resources, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["MetricName"] == "ClaimedAccountConcurrency"
    ]
    assert claimed["Properties"]["Threshold"] == math.ceil(2000 * settings.ALARM_ACCOUNT_CONCURRENCY_SHARE)


@pytest.mark.parametrize(
    ("context", "why"),
    [
        ({"corral:concurrency": "950"}, r"more than the account's 1000 less the 100"),
        ({"corral:concurrency": "410"}, r"needs at least 2 \(give the stage at least 422"),
        ({"corral:jobs": "examples/jobs", "corral:concurrency": "600"}, r"give the stage at least 622"),
        ({"corral:worker_max_pollers": "60"}, r"the worker's 602 \(60 pollers\) are more than the stage's 900"),
        ({"corral:worker_min_pollers": "30", "corral:worker_max_pollers": "25"}, r"30 is more than the maximum, 25"),
        ({"corral:api_throttle_rate": "100", "corral:api_throttle_burst": "200"}, r"200 is more than the rate"),
        ({"corral:api_reserved_concurrency": "many"}, r"'many' is not a whole number"),
    ],
)
def test_R16_a_share_that_does_not_fit_fails_the_synth_saying_why(context: dict, why: str, tmp_path: Path):
    with pytest.raises(SystemExit, match=why):
        synth("aws", tmp_path, context=context)


# R14: table deletion protection and a failed first create --------------------------------------------


def _table(template: Template | Synthesized) -> dict:
    (table,) = _of_type(_resources(template), "AWS::DynamoDB::GlobalTable").values()
    return table


def test_R14_a_stages_first_deploy_may_leave_table_protection_off_so_a_failed_create_rolls_back(
    aws_template: Template, tmp_path: Path
):
    first = synth("aws", tmp_path / "first", context={"corral:table_deletion_protection": "false"})
    for template, protected in ((first, False), (aws_template, True)):  # the default: protected
        table = _table(template)
        assert table["DeletionPolicy"] == "RetainExceptOnCreate" and table["UpdateReplacePolicy"] == "Retain"
        assert table["Properties"]["Replicas"][0]["DeletionProtectionEnabled"] is protected
    with pytest.raises(SystemExit, match="corral:table_deletion_protection: 'off' is neither true nor false"):
        synth("aws", tmp_path / "bad", context={"corral:table_deletion_protection": "off"})


# R15: customer code's own subnets ------------------------------------------------------------------


def _route_tables(resources: dict[str, dict], subnet_ids: set[str]) -> set[str]:
    return {
        a["Properties"]["RouteTableId"]["Ref"]
        for a in _of_type(resources, "AWS::EC2::SubnetRouteTableAssociation").values()
        if a["Properties"]["SubnetId"]["Ref"] in subnet_ids
    }


def test_R15_customer_code_has_subnets_of_its_own_whose_only_way_out_is_its_azs_nat(with_jobs: Synthesized):
    resources = _resources(with_jobs)
    subnets = _of_type(resources, "AWS::EC2::Subnet")
    jobs = {s["Ref"] for s in _function(resources, settings.JOBS_FUNCTION)["VpcConfig"]["SubnetIds"]}
    others = {
        s["Ref"] for f in _vpc_functions(resources).values() for s in f["Properties"]["VpcConfig"]["SubnetIds"]
    } - jobs
    assert len(jobs) == network.MAX_AZS and others and not jobs & others
    nats = _of_type(resources, "AWS::EC2::NatGateway")
    jobs_tables = _route_tables(resources, jobs)
    assert not jobs_tables & _route_tables(resources, others)
    routes = [
        r["Properties"]
        for r in _of_type(resources, "AWS::EC2::Route").values()
        if r["Properties"]["RouteTableId"]["Ref"] in jobs_tables
    ]
    assert len(routes) == len(jobs_tables) and all(r["DestinationCidrBlock"] == "0.0.0.0/0" for r in routes)
    for subnet_id in jobs:
        (table,) = _route_tables(resources, {subnet_id})
        (route,) = [r for r in routes if r["RouteTableId"]["Ref"] == table]
        nat_subnet = nats[route["NatGatewayId"]["Ref"]]["Properties"]["SubnetId"]["Ref"]
        zone = subnets[subnet_id]["Properties"]["AvailabilityZone"]
        assert subnets[nat_subnet]["Properties"]["AvailabilityZone"] == zone  # the same EgressIps as the worker's
    for endpoint in _of_type(resources, "AWS::EC2::VPCEndpoint").values():  # no gateway endpoint route either
        assert not {t["Ref"] for t in endpoint["Properties"].get("RouteTableIds", [])} & jobs_tables


def _acl_rules(resources: dict[str, dict], subnet_ids: set[str]) -> dict[bool, list[dict]]:
    """The network ACL entries of these subnets, by direction (True: egress), in the order the ACL applies them."""
    (acl,) = {
        a["Properties"]["NetworkAclId"]["Ref"]
        for a in _of_type(resources, "AWS::EC2::SubnetNetworkAclAssociation").values()
        if a["Properties"]["SubnetId"]["Ref"] in subnet_ids
    }
    entries = [
        e["Properties"]
        for e in _of_type(resources, "AWS::EC2::NetworkAclEntry").values()
        if e["Properties"]["NetworkAclId"]["Ref"] == acl
    ]
    return {
        egress: sorted((e for e in entries if e["Egress"] is egress), key=lambda e: e["RuleNumber"])
        for egress in (True, False)
    }


def _first_match(rules: list[dict], address: str, port: int) -> str:
    """What a stateless ACL does with a TCP packet to (egress) or from (ingress) `address` on `port`."""
    for rule in rules:
        ports = rule.get("PortRange")
        if ipaddress.ip_address(address) in ipaddress.ip_network(rule["CidrBlock"]) and (
            rule["Protocol"] == -1 or (rule["Protocol"] == 6 and ports["From"] <= port <= ports["To"])
        ):
            return rule["RuleAction"]
    return "deny"


def test_R15_customer_codes_subnets_refuse_private_addresses_but_the_endpoints(with_jobs: Synthesized):
    resources = _resources(with_jobs)
    jobs = {s["Ref"] for s in _function(resources, settings.JOBS_FUNCTION)["VpcConfig"]["SubnetIds"]}
    rules = _acl_rules(resources, jobs)
    endpoint_subnets = {
        s["Ref"]
        for e in _of_type(resources, "AWS::EC2::VPCEndpoint").values()
        for s in e["Properties"].get("SubnetIds", [])
    }
    subnets = _of_type(resources, "AWS::EC2::Subnet")
    endpoint_address = str(ipaddress.ip_network(subnets[min(endpoint_subnets)]["Properties"]["CidrBlock"])[9])
    assert _first_match(rules[True], endpoint_address, 443) == "allow"  # SQS and Scheduler, over HTTPS
    assert _first_match(rules[False], endpoint_address, 40000) == "allow"  # and their answers
    assert _first_match(rules[True], endpoint_address, 9111) == "deny"  # nothing else there
    for private in ("10.1.2.3", "172.20.0.1", "192.168.1.1", "100.64.0.1", "10.0.0.10"):  # peering, VPN, DAX
        assert _first_match(rules[True], private, 443) == "deny", private
        assert _first_match(rules[False], private, 40000) == "deny", private
    assert _first_match(rules[True], "93.184.216.34", 443) == "allow"  # the internet, through the NAT
    assert _first_match(rules[False], "93.184.216.34", 40000) == "allow"


# R17: the dashboard's name in two Regions --------------------------------------------------------------


def test_R17_a_stages_dashboard_name_carries_its_region(staged: dict[str, Synthesized], aws_template: Template):
    (dashboard,) = _of_type(_resources(staged["prod"]), "AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == {
        "Fn::Join": ["", [f"{settings.names('prod').dashboard}-", {"Ref": "AWS::Region"}]]
    }
    (unstaged,) = _of_type(_resources(aws_template), "AWS::CloudWatch::Dashboard").values()
    assert unstaged["Properties"]["DashboardName"] == settings.names().dashboard  # an existing stack keeps its name


# R18 and R24: what function code may not do --------------------------------------------------------------


def _network_interface_denials(resources: dict[str, dict], function: dict) -> list[dict]:
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    (policy,) = _network_interface_policies(resources, role_id)
    statements = resources[policy]["Properties"]["PolicyDocument"]["Statement"]
    return [s for s in statements if s["Effect"] == "Deny"]


def test_R18_function_code_may_not_list_the_accounts_network_interfaces_or_subnets(with_jobs: Synthesized):
    resources = _resources(with_jobs)
    for logical_id, function in _vpc_functions(resources).items():
        (deny,) = _network_interface_denials(resources, function)
        assert set(_actions(deny)) == {*ENI_ACTIONS, *ENI_READS}, logical_id


def test_R24_the_network_interface_deny_holds_for_every_version_and_alias_of_the_function(with_jobs: Synthesized):
    resources = _resources(with_jobs)
    for function in _vpc_functions(resources).values():
        (deny,) = _network_interface_denials(resources, function)
        name = function["Properties"]["FunctionName"]
        assert list(deny["Condition"]) == ["ArnLike"], name  # not ArnEquals: an alias's ARN is <arn>:<alias>
        arn, qualified = deny["Condition"]["ArnLike"]["lambda:SourceFunctionArn"]
        parts = arn["Fn::Join"][1]
        assert parts[:3] == ["arn:", {"Ref": "AWS::Partition"}, ":lambda:"] and parts[-1] == f":function:{name}"
        assert qualified == {"Fn::Join": ["", [*parts[:-1], f":function:{name}:*"]]}, name


def test_R24_no_function_may_use_partiql_on_the_table(aws_template: Template, local_template: Template):
    for template in (aws_template, local_template):
        resources = _resources(template)
        for name in (settings.API_FUNCTION, settings.WORKER_FUNCTION):
            role_id = _function(resources, name)["Role"]["Fn::GetAtt"][0]
            statements = [
                s
                for p in _of_type(resources, "AWS::IAM::Policy").values()
                if {"Ref": role_id} in p["Properties"]["Roles"]
                for s in p["Properties"]["PolicyDocument"]["Statement"]
            ]
            denied = {a for s in statements if s["Effect"] == "Deny" and "Condition" not in s for a in _actions(s)}
            partiql = {f"dynamodb:PartiQL{verb}" for verb in ("Select", "Insert", "Update", "Delete")}
            assert partiql <= denied, (name, partiql - denied)


def test_R24_daxs_role_needs_a_partition_key_in_each_request(aws_template: Template):
    (role_id,) = [
        k
        for k, r in _of_type(_resources(aws_template), "AWS::IAM::Role").items()
        if r["Properties"].get("Description") == "DAX -> jobs table"
    ]
    statements = [
        s
        for p in _of_type(_resources(aws_template), "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    keyed = [s for s in statements if "ForAllValues:StringLike" in s.get("Condition", {})]
    assert keyed and all(s["Condition"]["Null"] == {"dynamodb:LeadingKeys": "false"} for s in keyed)


# R19: alarms --------------------------------------------------------------------------------------------


def _alarms(template: Template | Synthesized) -> list[dict]:
    return [a["Properties"] for a in _of_type(_resources(template), "AWS::CloudWatch::Alarm").values()]


def test_R19_each_nat_gateway_pages_when_it_cannot_open_connections_or_drops_packets(aws_template: Template):
    nats = _of_type(_resources(aws_template), "AWS::EC2::NatGateway")
    assert len(nats) == network.NAT_GATEWAYS
    watched = {
        (a["MetricName"], a["Dimensions"][0]["Value"]["Ref"])
        for a in _alarms(aws_template)
        if a["Namespace"] == "AWS/NATGateway"
    }
    assert watched == {(metric, nat) for nat in nats for metric in ("ErrorPortAllocation", "PacketsDropCount")}


def test_R19_the_accounts_claimed_concurrency_pages_before_unreserved_functions_throttle(aws_template: Template):
    (claimed,) = [a for a in _alarms(aws_template) if a["MetricName"] == "ClaimedAccountConcurrency"]
    assert claimed["Namespace"] == "AWS/Lambda" and "Dimensions" not in claimed  # an account-level metric
    assert claimed["Statistic"] == "Maximum"
    assert claimed["Threshold"] == math.ceil(ACCOUNT * settings.ALARM_ACCOUNT_CONCURRENCY_SHARE)


def test_R19_each_index_of_the_table_pages_when_it_throttles(aws_template: Template, local_template: Template):
    for template in (aws_template, local_template):
        watched = {
            (
                a["MetricName"],
                next((d["Value"] for d in a["Dimensions"] if d["Name"] == "GlobalSecondaryIndexName"), None),
            )
            for a in _alarms(template)
            if a["MetricName"] in ("ReadThrottleEvents", "WriteThrottleEvents")
        }
        indexes = [index.name for index in table_schema.INDEXES]
        expected = {(f"{d}ThrottleEvents", index) for d in ("Read", "Write") for index in [None, *indexes]}
        assert watched == expected


def test_R19_scheduler_throttles_page_per_group_and_account_wide(aws_template: Template):
    throttles = [a for a in _alarms(aws_template) if a["MetricName"] == "InvocationThrottleCount"]
    assert sorted(json.dumps(a.get("Dimensions", [])) for a in throttles) == sorted(
        [json.dumps([]), json.dumps([{"Name": "ScheduleGroup", "Value": settings.SCHEDULE_GROUP}])]
    )


# R20: teardown keeps customers' schedules with their records ---------------------------------------------


def test_R20_on_aws_the_schedule_group_stays_with_the_table(aws_template: Template, local_template: Template):
    (group,) = _of_type(_resources(aws_template), "AWS::Scheduler::ScheduleGroup").values()
    assert (group["DeletionPolicy"], group["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")
    assert (group["DeletionPolicy"], group["UpdateReplacePolicy"]) == (_table(aws_template)["DeletionPolicy"], "Retain")
    (local_group,) = _of_type(_resources(local_template), "AWS::Scheduler::ScheduleGroup").values()
    assert local_group.get("DeletionPolicy", "Delete") == "Delete"  # the emulator's stacks come and go


# R21: customer code writes no traces ------------------------------------------------------------------


OTEL = "arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-python-amd64-ver-1-32-0:2"


def test_R21_customer_code_is_not_traced_and_may_not_write_traces(with_jobs: Synthesized, tmp_path: Path):
    resources = _resources(with_jobs)
    jobs = _function(resources, settings.JOBS_FUNCTION)
    assert "TracingConfig" not in jobs  # Lambda's default, PassThrough: no segment of its own
    assert jobs["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == "true"
    role_id = jobs["Role"]["Fn::GetAtt"][0]
    granted = json.dumps(
        [p for p in _of_type(resources, "AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"]]
    )
    assert "xray:" not in granted
    for name in (settings.API_FUNCTION, settings.WORKER_FUNCTION):
        assert _function(resources, name)["TracingConfig"] == {"Mode": "Active"}  # the platform's still are
    # Nor does it export traces with OpenTelemetry when the platform's functions do.
    context = {"corral:jobs": "examples/jobs", "corral:otel_layer": OTEL}
    otel = _resources(synth("aws", tmp_path, context=context))
    assert OTEL not in _function(otel, settings.JOBS_FUNCTION)["Layers"]
    assert "AWS_LAMBDA_EXEC_WRAPPER" not in _function(otel, settings.JOBS_FUNCTION)["Environment"]["Variables"]
    assert OTEL in _function(otel, settings.WORKER_FUNCTION)["Layers"]


# R11: IAM and network hygiene --------------------------------------------------------------------------


def _trust(resources: dict[str, dict], service: str) -> dict:
    (role,) = [
        r["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        for r in _of_type(resources, "AWS::IAM::Role").values()
        if r["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": service}
    ]
    (statement,) = role
    return statement.get("Condition", {})


def test_R11_flow_logs_and_dax_may_assume_their_roles_for_this_account_only(aws_template: Template):
    resources = _resources(aws_template)
    flow_logs = _trust(resources, "vpc-flow-logs.amazonaws.com")
    assert flow_logs["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert ":vpc-flow-log/*" in json.dumps(flow_logs["ArnLike"]["aws:SourceArn"])
    assert _trust(resources, "dax.amazonaws.com") == {
        "StringEqualsIfExists": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    }


def test_R11_the_scheduler_role_may_only_send_to_the_queues(aws_template: Template, local_template: Template):
    for template in (aws_template, local_template):
        resources = _resources(template)
        (role_id,) = [
            k
            for k, r in _of_type(resources, "AWS::IAM::Role").items()
            if r["Properties"].get("RoleName") == settings.SCHEDULER_ROLE_NAME
        ]
        actions = {
            a
            for p in _of_type(resources, "AWS::IAM::Policy").values()
            if {"Ref": role_id} in p["Properties"]["Roles"]
            for s in p["Properties"]["PolicyDocument"]["Statement"]
            for a in _actions(s)
        }
        assert actions == {"sqs:SendMessage"}


def test_R11_no_subnet_gives_a_public_address_on_launch(aws_template: Template, with_jobs: Synthesized):
    for template in (aws_template, with_jobs):
        for logical_id, subnet in _of_type(_resources(template), "AWS::EC2::Subnet").items():
            assert subnet["Properties"]["MapPublicIpOnLaunch"] is False, logical_id


def test_R11_every_function_logs_to_a_group_that_expires(aws_template: Template, with_jobs: Synthesized):
    """CDK's custom-resource handler included: its implicit /aws/lambda group would never expire."""
    for template in (aws_template, with_jobs):
        resources = _resources(template)
        for logical_id, function in _of_type(resources, "AWS::Lambda::Function").items():
            group = function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
            assert resources[group]["Properties"]["RetentionInDays"] == 30, logical_id


def test_R11_the_stacks_resources_are_tagged_with_their_stage(staged: dict[str, Synthesized], aws_template: Template):
    for template, stage in ((staged["prod"], "prod"), (aws_template, "unstaged")):
        resources = _resources(template)
        for type_ in (
            "AWS::Lambda::Function",
            "AWS::SQS::Queue",
            "AWS::SNS::Topic",
            "AWS::EC2::VPC",
            "AWS::DAX::Cluster",
            "AWS::Logs::LogGroup",
            "AWS::Scheduler::ScheduleGroup",
        ):
            for logical_id, resource in _of_type(resources, type_).items():
                if logical_id.startswith("CustomVpcRestrictDefaultSG"):
                    continue  # CDK's own deploy-time handler: its construct is outside the tagged tree
                tags = resource["Properties"].get("Tags", {})
                tags = tags if isinstance(tags, dict) else {t["Key"]: t["Value"] for t in tags}
                assert tags.get("corral:stage") == stage, (type_, logical_id)
        (replica,) = _table(template)["Properties"]["Replicas"]
        assert {"Key": "corral:stage", "Value": stage} in replica["Tags"]
