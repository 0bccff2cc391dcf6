"""Template assertions: every property the production stack promises, per profile."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template

from infra import network
from infra.synth import Synthesized, synth
from infra.table_access import DAX_FUNCTION_ACTIONS
from shared import profiles, settings
from shared.flow.priority import Priority, split
from shared.store import keys

ROOT = Path(__file__).resolve().parents[2]  # the repository

AWS = profiles.PROFILES["aws"]
LOCAL = profiles.PROFILES["local"]


def _functions(template: Template) -> dict[str, dict]:
    return template.find_resources("AWS::Lambda::Function", {"Properties": {"Layers": Match.any_value()}})


def _only(template: Template, type_: str, props: dict | None = None) -> dict:
    found = template.find_resources(type_, {"Properties": props} if props else None)
    assert len(found) == 1, (type_, list(found))
    return next(iter(found.values()))


# HTTP API -------------------------------------------------------------------------------------------


def test_the_stage_throttle_is_below_the_account_quota_and_the_api_has_reserved_concurrency(
    aws_template: Template, local_template: Template
):
    from bench.models import capacity

    assert settings.API_THROTTLE_RATE_PER_SECOND < capacity.API_GATEWAY_RPS
    assert settings.API_THROTTLE_RATE_PER_SECOND >= 6_000  # the sustained-enqueue SLO
    api = _only(aws_template, "AWS::Lambda::Function", {"FunctionName": settings.API_FUNCTION})["Properties"]
    assert api["ReservedConcurrentExecutions"] == settings.API_RESERVED_CONCURRENCY
    worker = _only(aws_template, "AWS::Lambda::Function", {"FunctionName": settings.WORKER_FUNCTION})["Properties"]
    assert "ReservedConcurrentExecutions" not in worker
    # The workers' most (10 invokes a poller) and the API's reservation fit the default account quota.
    workers_most = settings.WORKER_MAX_POLLERS * 10 + settings.BACKSTOP_MAX_CONCURRENCY
    assert workers_most + settings.API_RESERVED_CONCURRENCY <= settings.ACCOUNT_CONCURRENCY
    assert capacity.plan(capacity.Inputs())["api_concurrency_at_burst"] <= settings.API_RESERVED_CONCURRENCY
    local_api = _only(local_template, "AWS::Lambda::Function", {"FunctionName": settings.API_FUNCTION})
    assert "ReservedConcurrentExecutions" not in local_api["Properties"]


def test_default_stage_is_throttled_and_writes_access_logs(aws_template: Template, local_template: Template):
    for template in (aws_template, local_template):
        template.has_resource_properties(
            "AWS::ApiGatewayV2::Stage",
            {
                "StageName": "$default",
                "AutoDeploy": True,
                "DefaultRouteSettings": {
                    "ThrottlingRateLimit": settings.API_THROTTLE_RATE_PER_SECOND,
                    "ThrottlingBurstLimit": settings.API_THROTTLE_BURST,
                },
                "AccessLogSettings": {
                    "DestinationArn": {"Fn::GetAtt": [Match.string_like_regexp("AccessLogs"), "Arn"]},
                    "Format": Match.string_like_regexp(r"\$context\.requestId"),
                },
            },
        )


# Queue ----------------------------------------------------------------------------------------------


def test_the_worker_runs_15_minute_jobs_on_aws_and_the_queue_outlasts_its_timeout(
    aws_template: Template, local_template: Template
):
    """SQS event sources need visibility >= the function timeout; per-job visibility does the rest (cover.py)."""
    for template, profile in ((aws_template, AWS), (local_template, LOCAL)):
        queue = _only(template, "AWS::SQS::Queue", {"QueueName": settings.QUEUE_NAME})["Properties"]
        worker = _only(template, "AWS::Lambda::Function", {"FunctionName": settings.WORKER_FUNCTION})["Properties"]
        assert worker["Timeout"] == profile.worker_timeout_seconds
        assert queue["VisibilityTimeout"] == worker["Timeout"] + settings.QUEUE_VISIBILITY_MARGIN_SECONDS
        environment = worker["Environment"]["Variables"]
        ceiling = int(environment["CORRAL_JOB_TIMEOUT_CEILING"])
        assert ceiling == profile.job_timeout_ceiling_seconds <= worker["Timeout"] - settings.JOB_START_RESERVE_SECONDS
        assert int(environment["CORRAL_LEASE_SECONDS"]) > ceiling
        assert int(environment["CORRAL_LEASE_SECONDS"]) < queue["VisibilityTimeout"]
    aws_worker = _only(aws_template, "AWS::Lambda::Function", {"FunctionName": settings.WORKER_FUNCTION})["Properties"]
    assert aws_worker["Timeout"] == settings.MAX_JOB_TIMEOUT_SECONDS == 900


def test_hand_backs_grow_to_at_most_the_visibility_timeout(aws_template: Template, local_template: Template):
    for template, profile in ((aws_template, AWS), (local_template, LOCAL)):
        worker = _only(template, "AWS::Lambda::Function", {"FunctionName": settings.WORKER_FUNCTION})["Properties"]
        hand_back_max = worker["Environment"]["Variables"]["CORRAL_HAND_BACK_MAX_SECONDS"]
        assert hand_back_max == str(profile.visibility_timeout_seconds)


def _queue_id(template: Template, name: str) -> str:
    (logical_id,) = template.find_resources("AWS::SQS::Queue", {"Properties": {"QueueName": name}})
    return logical_id


def test_queues_are_encrypted_tls_only_and_redrive_to_the_backstop_then_the_dlq_after_the_receive_budget(
    aws_template: Template, local_template: Template
):
    lanes = [level.queue_name(settings.names()) for level in Priority]
    for name in (*lanes, settings.BACKSTOP_NAME, settings.DLQ_NAME):
        aws_template.has_resource_properties(
            "AWS::SQS::Queue",
            {"QueueName": name, "SqsManagedSseEnabled": True, "MessageRetentionPeriod": 14 * 24 * 3600},
        )
    for template, profile in ((aws_template, AWS), (local_template, LOCAL)):
        for source, target in (
            *((lane, settings.BACKSTOP_NAME) for lane in lanes),
            (settings.BACKSTOP_NAME, settings.DLQ_NAME),
        ):
            redrive = _only(template, "AWS::SQS::Queue", {"QueueName": source})["Properties"]["RedrivePolicy"]
            assert redrive == {
                "deadLetterTargetArn": {"Fn::GetAtt": [_queue_id(template, target), "Arn"]},
                "maxReceiveCount": profile.receive_budget,
            }
        assert "RedrivePolicy" not in _only(template, "AWS::SQS::Queue", {"QueueName": settings.DLQ_NAME})["Properties"]
        # The worker knows the budget it must never let a wait spend, and sends a waiting job again before it.
        variables = _only(template, "AWS::Lambda::Function", {"FunctionName": settings.WORKER_FUNCTION})["Properties"][
            "Environment"
        ]["Variables"]
        assert int(variables["CORRAL_RECEIVE_BUDGET"]) == profile.receive_budget
        assert 1 < int(variables["CORRAL_WAIT_RESEND_AT"]) == profile.wait_resend_at < profile.receive_budget
        assert variables["CORRAL_BACKSTOP_ARN"] == {"Fn::GetAtt": [_queue_id(template, settings.BACKSTOP_NAME), "Arn"]}
    assert AWS.receive_budget == LOCAL.receive_budget == settings.MAX_RECEIVE_COUNT
    policies = aws_template.find_resources("AWS::SQS::QueuePolicy")
    assert len(policies) == 5  # the three lanes', the backstop's and the DLQ's
    for policy in policies.values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        deny_conditions = [s.get("Condition") for s in statements if s["Effect"] == "Deny"]
        assert {"Bool": {"aws:SecureTransport": "false"}} in deny_conditions


def _role_arn(template: Template, logical_id_prefix: str) -> dict:
    (role_id,) = [
        logical_id
        for logical_id in template.find_resources("AWS::IAM::Role")
        if logical_id.startswith(logical_id_prefix)
    ]
    return {"Fn::GetAtt": [role_id, "Arn"]}


def _queue_policy_statements(template: Template, queue_logical_prefix: str) -> list[dict]:
    policies = [
        p
        for p in template.find_resources("AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"][0]["Ref"].startswith(queue_logical_prefix)
        # "QueueJobs" is the jobs queue's, not the other lanes' (QueueJobsHigh..., QueueJobsLow...)
        and not p["Properties"]["Queues"][0]["Ref"].startswith(
            (f"{queue_logical_prefix}High", f"{queue_logical_prefix}Low")
        )
    ]
    assert len(policies) == 1
    return policies[0]["Properties"]["PolicyDocument"]["Statement"]


def _corral_senders(template: Template) -> list[dict]:
    """The API, Scheduler's role, and the workers (outcome messages recorded late,
    shared/worker/complete/completer.py)."""
    names = ("ApiHandlerServiceRole", "SchedulesRole", "WorkersHandlerServiceRole")
    return [_role_arn(template, name) for name in names]


def test_only_the_api_the_scheduler_role_and_the_workers_may_send_to_the_jobs_queue(
    aws_template: Template, local_template: Template
):
    for template in (aws_template, local_template):
        senders = _corral_senders(template)
        statements = {s.get("Sid"): s for s in _queue_policy_statements(template, "QueueJobs")}
        deny = statements["OnlyCorralSends"]
        assert (deny["Effect"], deny["Principal"], deny["Action"]) == ("Deny", {"AWS": "*"}, "sqs:SendMessage")
        assert deny["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": senders}}
        allow = statements["CorralSenders"]
        assert (allow["Effect"], allow["Action"]) == ("Allow", "sqs:SendMessage")
        assert allow["Principal"] == {"AWS": senders}


def test_operator_roles_named_at_deploy_may_send_too(tmp_path):
    ops = "arn:aws:iam::123456789012:role/ops"
    template = Template.from_json(synth("local", tmp_path, context={"corral:operator_roles": f" {ops} ,"}).template)
    statements = {s.get("Sid"): s for s in _queue_policy_statements(template, "QueueJobs")}
    senders = [*_corral_senders(template), ops]
    assert statements["OnlyCorralSends"]["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": senders}}
    assert sorted(map(json.dumps, statements["CorralSenders"]["Principal"]["AWS"])) == sorted(map(json.dumps, senders))


def _grants_on(statements: list[dict], action: str, resource: dict) -> bool:
    def resources(statement: dict) -> list:
        found = statement["Resource"]
        return found if isinstance(found, list) else [found]

    return any(action in _actions(s) and resource in resources(s) for s in statements if s["Effect"] == "Allow")


def test_the_worker_may_send_outcomes_to_the_jobs_queue_hand_back_and_bury(
    aws_template: Template, local_template: Template
):
    for template in (aws_template, local_template):
        worker = _policy_statements_of_role_of_function(template, settings.WORKER_FUNCTION)
        (jobs,) = template.find_resources("AWS::SQS::Queue", {"Properties": {"QueueName": settings.QUEUE_NAME}})
        (dlq,) = template.find_resources("AWS::SQS::Queue", {"Properties": {"QueueName": settings.DLQ_NAME}})
        backstop_arn = {"Fn::GetAtt": [_queue_id(template, settings.BACKSTOP_NAME), "Arn"]}
        jobs_arn, dlq_arn = {"Fn::GetAtt": [jobs, "Arn"]}, {"Fn::GetAtt": [dlq, "Arn"]}
        assert _grants_on(worker, "sqs:SendMessage", jobs_arn)  # outcome messages (shared/worker/complete/completer.py)
        assert _grants_on(worker, "sqs:ChangeMessageVisibility", jobs_arn)
        assert _grants_on(worker, "sqs:SendMessage", dlq_arn)
        # It drains the backstop (its event source) and hands back there, but never sends to it.
        assert _grants_on(worker, "sqs:ReceiveMessage", backstop_arn)
        assert _grants_on(worker, "sqs:ChangeMessageVisibility", backstop_arn)
        assert not _grants_on(worker, "sqs:SendMessage", backstop_arn)


# Worker event source ----------------------------------------------------------------------------------


def test_worker_event_source_batches_reports_item_failures_and_scales_by_profile(
    aws_template: Template, local_template: Template
):
    common = {
        "BatchSize": settings.WORKER_BATCH_SIZE,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
    }
    jobs_queue = {"Fn::GetAtt": [_queue_id(aws_template, settings.QUEUE_NAME), "Arn"]}
    # The default lane's share of the worker's most batches (shared/flow/priority.py `split`), in pollers.
    default_pollers = split(settings.WORKER_MAX_POLLERS * settings.INVOKES_PER_POLLER).default // 10
    aws_template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            **common,
            "EventSourceArn": jobs_queue,
            "ProvisionedPollerConfig": {
                "MinimumPollers": settings.WORKER_MIN_POLLERS,
                "MaximumPollers": default_pollers,
            },
            "ScalingConfig": Match.absent(),  # AWS rejects MaximumConcurrency together with provisioned mode
        },
    )
    local_template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            **common,
            "EventSourceArn": {"Fn::GetAtt": [_queue_id(local_template, settings.QUEUE_NAME), "Arn"]},
            "ScalingConfig": {"MaximumConcurrency": split(settings.WORKER_MAX_CONCURRENCY).default},
            "ProvisionedPollerConfig": Match.absent(),
        },
    )
    window = _only(aws_template, "AWS::Lambda::EventSourceMapping", {"EventSourceArn": jobs_queue})["Properties"].get(
        "MaximumBatchingWindowInSeconds", 0
    )
    assert window == settings.WORKER_BATCHING_WINDOW_SECONDS
    assert 2 <= settings.WORKER_MIN_POLLERS <= 200 and settings.WORKER_MIN_POLLERS <= settings.WORKER_MAX_POLLERS


def test_each_priority_lane_is_a_queue_with_an_event_source_bounded_by_its_share(
    aws_template: Template, local_template: Template
):
    """docs/decisions/priorities.md: high and low each a queue like the jobs queue (encrypted, TLS only, the same
    visibility and retention, dead-lettering to the backstop after the same receive budget), each drained by the
    worker with a MaximumConcurrency of its share; the lanes together stay within the worker's most batches."""
    for template, batches in (
        (aws_template, settings.WORKER_MAX_POLLERS * settings.INVOKES_PER_POLLER),
        (local_template, settings.WORKER_MAX_CONCURRENCY),
    ):
        queues = template.find_resources("AWS::SQS::Queue")
        jobs = queues[_queue_id(template, settings.QUEUE_NAME)]["Properties"]
        backstop = _queue_id(template, settings.BACKSTOP_NAME)
        worker = _only(template, "AWS::Lambda::Function", {"FunctionName": settings.WORKER_FUNCTION})
        worker_id = next(iter(template.find_resources("AWS::Lambda::Function", worker)))
        shares = split(batches)
        for level in (Priority.HIGH, Priority.LOW):
            lane_id = _queue_id(template, level.queue_name(settings.names()))
            lane = queues[lane_id]["Properties"]
            assert {name: value for name, value in lane.items() if name not in ("QueueName", "RedrivePolicy")} == {
                name: value for name, value in jobs.items() if name not in ("QueueName", "RedrivePolicy")
            }
            assert lane["RedrivePolicy"] == {
                "deadLetterTargetArn": {"Fn::GetAtt": [backstop, "Arn"]},
                "maxReceiveCount": jobs["RedrivePolicy"]["maxReceiveCount"],
            }
            mapping = _only(
                template, "AWS::Lambda::EventSourceMapping", {"EventSourceArn": {"Fn::GetAtt": [lane_id, "Arn"]}}
            )["Properties"]
            assert mapping["FunctionName"] == {"Ref": worker_id}
            assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
            assert mapping["ScalingConfig"] == {"MaximumConcurrency": shares.of(level)}
            assert "ProvisionedPollerConfig" not in mapping
        assert shares.high + shares.default + shares.low <= batches


def test_every_lane_queue_denies_senders_other_than_corral_and_redrives_only_into_the_backstop(
    aws_template: Template,
):
    """A message on any lane runs as a tenant's job: each lane's policy names the same senders as the jobs
    queue's, and the backstop takes SQS's redrive from the three lanes (and no other queue)."""
    policies = aws_template.find_resources("AWS::SQS::QueuePolicy")
    statements_by_queue: dict[str, list[dict]] = {}
    for policy in policies.values():
        for queue_ref in policy["Properties"]["Queues"]:
            statements_by_queue.setdefault(queue_ref["Ref"], []).extend(
                policy["Properties"]["PolicyDocument"]["Statement"]
            )

    def deny_senders(queue_id: str) -> dict:
        deny = [s for s in statements_by_queue[queue_id] if s.get("Sid") == "OnlyCorralSends"]
        assert len(deny) == 1
        return deny[0]["Condition"]

    jobs_id = _queue_id(aws_template, settings.QUEUE_NAME)
    for level in (Priority.HIGH, Priority.LOW):
        assert deny_senders(_queue_id(aws_template, level.queue_name(settings.names()))) == deny_senders(jobs_id)
    backstop = aws_template.find_resources("AWS::SQS::Queue")[_queue_id(aws_template, settings.BACKSTOP_NAME)]
    sources = backstop["Properties"]["RedriveAllowPolicy"]["sourceQueueArns"]
    written = json.dumps(sources)
    assert len(sources) == 3
    assert all(f':{level.queue_name(settings.names())}"' in written for level in Priority)


def test_the_worker_drains_the_backstop_with_an_event_source_of_its_own(
    aws_template: Template, local_template: Template
):
    for template in (aws_template, local_template):
        worker = _only(template, "AWS::Lambda::Function", {"FunctionName": settings.WORKER_FUNCTION})
        backstop = {"Fn::GetAtt": [_queue_id(template, settings.BACKSTOP_NAME), "Arn"]}
        mapping = _only(template, "AWS::Lambda::EventSourceMapping", {"EventSourceArn": backstop})["Properties"]
        assert mapping["FunctionName"] == {"Ref": next(iter(template.find_resources("AWS::Lambda::Function", worker)))}
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert mapping["ScalingConfig"] == {"MaximumConcurrency": 2} and "ProvisionedPollerConfig" not in mapping
        # Its event source needs the backstop's visibility to outlast the worker's timeout, as the jobs queue's.
        visibility = _only(template, "AWS::SQS::Queue", {"QueueName": settings.BACKSTOP_NAME})["Properties"]
        assert visibility["VisibilityTimeout"] >= worker["Properties"]["Timeout"]


# Store ----------------------------------------------------------------------------------------------


def test_table_is_on_demand_with_pitr_ttl_the_runs_index_and_the_jobs_index(
    aws_template: Template, local_template: Template
):
    for template in (aws_template, local_template):
        template.has_resource_properties(
            "AWS::DynamoDB::GlobalTable",
            {
                "TableName": settings.TABLE_NAME,
                "BillingMode": "PAY_PER_REQUEST",
                "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
                "Replicas": [
                    Match.object_like({"PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}})
                ],
                "GlobalSecondaryIndexes": [
                    Match.object_like(
                        {
                            "IndexName": "gsi1",
                            "KeySchema": [
                                {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                                {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
                            ],
                            "Projection": {"ProjectionType": "ALL"},
                        }
                    ),
                    Match.object_like(
                        {
                            "IndexName": "gsi2",
                            "KeySchema": [
                                {"AttributeName": "gsi2pk", "KeyType": "HASH"},
                                {"AttributeName": "gsi2sk", "KeyType": "RANGE"},
                            ],
                            # The listing's fields only: never the 64 KiB payload or result bodies.
                            "Projection": {
                                "ProjectionType": "INCLUDE",
                                "NonKeyAttributes": Match.array_with(["status", "job_type", "enqueued_at"]),
                            },
                        }
                    ),
                ],
            },
        )


def test_on_aws_the_table_survives_deletes_and_replacements_but_not_a_failed_first_create(
    aws_template: Template, local_template: Template
):
    """RETAIN_ON_UPDATE_OR_DELETE: a first deploy that fails after the table exists rolls it back, so
    the retry does not meet an orphan of the same name; DeleteTable is refused until protection is off."""
    aws_template.has_resource(
        "AWS::DynamoDB::GlobalTable",
        {
            "DeletionPolicy": "RetainExceptOnCreate",
            "UpdateReplacePolicy": "Retain",
            "Properties": {"Replicas": [Match.object_like({"DeletionProtectionEnabled": True})]},
        },
    )
    local_template.has_resource("AWS::DynamoDB::GlobalTable", {"DeletionPolicy": "Delete"})


def test_on_aws_the_table_and_its_indexes_are_warm_for_the_herds_writes(
    aws_template: Template, local_template: Template
):
    from bench.models import capacity

    herd_writes = capacity.plan(capacity.Inputs())["dynamodb_writes_per_second_at_burst"]
    assert herd_writes == settings.TABLE_WARM_WRITES_PER_SECOND  # `make capacity`'s figure
    warm = {"ReadUnitsPerSecond": settings.TABLE_WARM_READS_PER_SECOND, "WriteUnitsPerSecond": herd_writes}
    table = _only(aws_template, "AWS::DynamoDB::GlobalTable")["Properties"]
    assert table["WarmThroughput"] == warm
    assert [index["WarmThroughput"] for index in table["GlobalSecondaryIndexes"]] == [warm, warm]
    assert "WarmThroughput" not in _only(local_template, "AWS::DynamoDB::GlobalTable")["Properties"]


# Functions ------------------------------------------------------------------------------------------


def test_both_functions_share_one_dependencies_layer_built_without_docker(aws_template: Template):
    layers = aws_template.find_resources("AWS::Lambda::LayerVersion")
    assert len(layers) == 1
    (layer_id,) = layers
    functions = _functions(aws_template)
    assert {f["Properties"]["FunctionName"] for f in functions.values()} == {
        settings.API_FUNCTION,
        settings.WORKER_FUNCTION,
    }
    for function in functions.values():
        assert function["Properties"]["Layers"] == [{"Ref": layer_id}]
        assert function["Properties"]["Runtime"] == "python3.11"


# DAX and the network (aws only) ---------------------------------------------------------------------


def test_dax_cluster_is_encrypted_at_rest_and_in_transit_inside_the_vpc(aws_template: Template):
    aws_template.has_resource_properties(
        "AWS::DAX::Cluster",
        {
            "ClusterName": settings.DAX_CLUSTER_NAME,
            "NodeType": settings.DAX_NODE_TYPE,
            "ReplicationFactor": settings.DAX_NODES,
            "SSESpecification": {"SSEEnabled": True},
            "ClusterEndpointEncryptionType": "TLS",
            "SubnetGroupName": {"Ref": Match.string_like_regexp("StatusCacheSubnets")},
            "SecurityGroupIds": Match.any_value(),
        },
    )
    aws_template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"IpProtocol": "tcp", "FromPort": 9111, "ToPort": 9111, "SourceSecurityGroupId": Match.any_value()},
    )


def test_both_functions_get_the_dax_endpoint_run_in_the_vpc_and_may_use_the_cluster(aws_template: Template):
    cluster_id = next(iter(aws_template.find_resources("AWS::DAX::Cluster")))
    for function in _functions(aws_template).values():
        properties = function["Properties"]
        assert properties["Environment"]["Variables"]["CORRAL_DAX_ENDPOINT"] == {
            "Fn::GetAtt": [cluster_id, "ClusterDiscoveryEndpointURL"]
        }
        assert properties["VpcConfig"]["SubnetIds"] and properties["VpcConfig"]["SecurityGroupIds"]
    granted = [
        policy
        for policy in aws_template.find_resources("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Resource"] == {"Fn::GetAtt": [cluster_id, "Arn"]}
        and sorted(statement["Action"]) == sorted(DAX_FUNCTION_ACTIONS)
    ]
    assert len(granted) == 2  # the API's and the worker's role


def _default_routes(template: Template, subnet_id: str) -> list[dict]:
    """The 0.0.0.0/0 routes of a subnet's route table (properties)."""
    tables = [
        a["Properties"]["RouteTableId"]
        for a in template.find_resources("AWS::EC2::SubnetRouteTableAssociation").values()
        if a["Properties"]["SubnetId"] == {"Ref": subnet_id}
    ]
    assert len(tables) == 1, (subnet_id, tables)
    routes = template.find_resources(
        "AWS::EC2::Route", {"Properties": {"RouteTableId": tables[0], "DestinationCidrBlock": "0.0.0.0/0"}}
    )
    return [route["Properties"] for route in routes.values()]


def _nat_gateway_subnets(template: Template) -> dict[str, str]:
    """NAT gateway logical id -> the public subnet it sits in."""
    return {
        nat_id: nat["Properties"]["SubnetId"]["Ref"]
        for nat_id, nat in template.find_resources("AWS::EC2::NatGateway").items()
    }


def test_functions_reach_the_internet_through_a_nat_gateway_in_their_own_az(aws_template: Template):
    """HTTP targets (customers' endpoints), Lambda targets (lambda:Invoke) and the operator view
    (cloudwatch:GetMetricData) have no VPC endpoint: their only way out is the NAT."""
    subnets = aws_template.find_resources("AWS::EC2::Subnet")
    nat_subnets = _nat_gateway_subnets(aws_template)
    assert len(nat_subnets) == network.NAT_GATEWAYS == network.MAX_AZS
    function_subnets = set()
    for function in _functions(aws_template).values():
        ids = function["Properties"]["VpcConfig"]["SubnetIds"]
        assert len(ids) == network.MAX_AZS, ids
        function_subnets |= {i["Ref"] for i in ids}
    for subnet_id in function_subnets:
        assert not subnets[subnet_id]["Properties"]["MapPublicIpOnLaunch"]
        (route,) = _default_routes(aws_template, subnet_id)
        nat_subnet = nat_subnets[route["NatGatewayId"]["Ref"]]
        # Same AZ: an AZ's outage takes only its own functions' egress with it, and no cross-AZ data charge.
        zone = subnets[subnet_id]["Properties"]["AvailabilityZone"]
        assert subnets[nat_subnet]["Properties"]["AvailabilityZone"] == zone
    outputs = aws_template.find_outputs("EgressIps")["EgressIps"]["Value"]["Fn::Join"]
    nat_addresses = [
        nat["Properties"]["AllocationId"] for nat in aws_template.find_resources("AWS::EC2::NatGateway").values()
    ]
    assert outputs[0] == "," and sorted(ref["Ref"] for ref in outputs[1]) == sorted(
        a["Fn::GetAtt"][0] for a in nat_addresses
    )
    (internet_gateway,) = aws_template.find_resources("AWS::EC2::InternetGateway")
    for nat_subnet in nat_subnets.values():
        assert [route.get("GatewayId") for route in _default_routes(aws_template, nat_subnet)] == [
            {"Ref": internet_gateway}
        ]


def test_dax_sits_in_isolated_subnets_reachable_only_from_the_functions(aws_template: Template):
    (subnet_group,) = aws_template.find_resources("AWS::DAX::SubnetGroup").values()
    dax_subnets = {i["Ref"] for i in subnet_group["Properties"]["SubnetIds"]}
    function_subnets = {
        i["Ref"] for f in _functions(aws_template).values() for i in f["Properties"]["VpcConfig"]["SubnetIds"]
    }
    assert len(dax_subnets) == network.MAX_AZS and not dax_subnets & function_subnets
    for subnet_id in dax_subnets:
        assert _default_routes(aws_template, subnet_id) == []  # no route out at all
    (cluster,) = aws_template.find_resources("AWS::DAX::Cluster").values()
    ((dax_group_id, _),) = [g["Fn::GetAtt"] for g in cluster["Properties"]["SecurityGroupIds"]]
    function_groups = {
        json.dumps(g, sort_keys=True)
        for f in _functions(aws_template).values()
        for g in f["Properties"]["VpcConfig"]["SecurityGroupIds"]
    }
    assert len(function_groups) == 1
    dax_group = aws_template.find_resources("AWS::EC2::SecurityGroup")[dax_group_id]["Properties"]
    assert "SecurityGroupIngress" not in dax_group  # inline rules would be open to a CIDR
    ingress = [
        rule["Properties"]
        for rule in aws_template.find_resources("AWS::EC2::SecurityGroupIngress").values()
        if rule["Properties"]["GroupId"] == {"Fn::GetAtt": [dax_group_id, "GroupId"]}
    ]
    assert ingress and all(
        json.dumps(rule["SourceSecurityGroupId"], sort_keys=True) in function_groups
        and (rule["FromPort"], rule["ToPort"]) == (9111, 9111)
        and "CidrIp" not in rule
        for rule in ingress
    ), ingress


def test_per_job_aws_traffic_stays_on_vpc_endpoints_not_the_nat(aws_template: Template):
    endpoints = aws_template.find_resources("AWS::EC2::VPCEndpoint")
    kinds = {
        (str(e["Properties"]["ServiceName"]), e["Properties"].get("VpcEndpointType", "Gateway"))
        for e in endpoints.values()
    }
    services = sorted(name.rsplit(".", 1)[-1].strip("'\"]}") + "/" + kind for name, kind in kinds)
    assert services == ["dynamodb/Gateway", "scheduler/Interface", "sqs/Interface"], services
    function_subnets = [i for f in _functions(aws_template).values() for i in f["Properties"]["VpcConfig"]["SubnetIds"]]
    (gateway,) = [e["Properties"] for e in endpoints.values() if "RouteTableIds" in e["Properties"]]
    # DynamoDB's prefix list is more specific than the NAT's 0.0.0.0/0 in the functions' route tables.
    for association in aws_template.find_resources("AWS::EC2::SubnetRouteTableAssociation").values():
        if association["Properties"]["SubnetId"] in function_subnets:
            assert association["Properties"]["RouteTableId"] in gateway["RouteTableIds"]
    for interface in (e["Properties"] for e in endpoints.values() if "SubnetIds" in e["Properties"]):
        assert sorted(map(json.dumps, interface["SubnetIds"])) == sorted(set(map(json.dumps, function_subnets)))
        assert interface["PrivateDnsEnabled"]  # the SDKs' default hostnames resolve to the endpoint, not the NAT
    aws_template.resource_count_is("AWS::EC2::FlowLog", 1)


def test_local_profile_has_no_dax_and_no_vpc(local_template: Template):
    for type_ in ("AWS::DAX::Cluster", "AWS::EC2::VPC", "AWS::EC2::VPCEndpoint"):
        local_template.resource_count_is(type_, 0)
    for function in _functions(local_template).values():
        assert "VpcConfig" not in function["Properties"]
        assert "CORRAL_DAX_ENDPOINT" not in function["Properties"]["Environment"]["Variables"]


# Alarms ---------------------------------------------------------------------------------------------

# Every alarm that pages, as (namespace, metric): on both profiles, and DAX's on aws.
PAGED = {
    ("AWS/ApiGateway", "5xx"),
    ("AWS/ApiGateway", "Latency"),
    ("AWS/SQS", "ApproximateAgeOfOldestMessage"),
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible"),
    ("corral", "PlatformDeadLetters"),
    ("corral", "StoreHandBacks"),
    ("AWS/Lambda", "Errors"),
    ("AWS/Lambda", "Throttles"),
    ("AWS/DynamoDB", "ReadThrottleEvents"),
    ("AWS/DynamoDB", "WriteThrottleEvents"),
    ("AWS/DynamoDB", "SystemErrors"),
    ("AWS/Scheduler", "TargetErrorCount"),
    ("AWS/Scheduler", "InvocationThrottleCount"),
    ("AWS/Scheduler", "InvocationDroppedCount"),
    ("AWS/Scheduler", "InvocationsSentToDeadLetterCount"),
}
PAGED_ON_AWS_ONLY = {
    ("AWS/DAX", "FaultRequestCount"),
    ("AWS/DAX", "ThrottledRequestCount"),
    ("AWS/NATGateway", "ErrorPortAllocation"),
    ("AWS/NATGateway", "PacketsDropCount"),
    ("AWS/Lambda", "ClaimedAccountConcurrency"),
}


def _alarms(template: Template) -> dict[str, dict]:
    return {logical_id: a["Properties"] for logical_id, a in template.find_resources("AWS::CloudWatch::Alarm").items()}


def test_each_named_alarm_is_there_and_notifies_when_it_fires_and_when_it_clears(
    aws_template: Template, local_template: Template
):
    for template, expected in ((aws_template, PAGED | PAGED_ON_AWS_ONLY), (local_template, PAGED)):
        alarms = _alarms(template)
        assert {(a["Namespace"], a["MetricName"]) for a in alarms.values()} == expected
        for alarm in alarms.values():
            assert alarm["AlarmActions"] and alarm["OKActions"] == alarm["AlarmActions"], alarm["AlarmName"]
            assert alarm["AlarmName"].startswith(settings.names().prefix)
            assert "Metrics" not in alarm  # plain metric alarms: the emulator has no metric math


def test_a_tenants_dead_jobs_page_nobody_platform_dead_letters_do(aws_template: Template):
    """The DLQ holds every tenant's jobs that used their attempts: its depth pages no one (it would sit
    in ALARM for good in a multi-tenant deployment); unreadable messages, jobs recorded dead from the
    backstop (shared/aws/metrics.py counts both as PlatformDeadLetters) and Scheduler's dead letters do."""
    alarms = _alarms(aws_template).values()
    dlq_alarms = [a for a in alarms if json.dumps(a.get("Dimensions", [])).find("QueueDeadLetters") >= 0]
    assert dlq_alarms == []
    (platform,) = [a for a in alarms if a["MetricName"] == "PlatformDeadLetters"]
    assert platform["Dimensions"] == [{"Name": "service", "Value": "corral-worker"}]
    assert (platform["Namespace"], platform["Statistic"], platform["Threshold"]) == ("corral", "Sum", 1)
    assert not any(a["MetricName"] in ("JobsDead", "DeadLettersByTenant") for a in alarms)


def test_the_oldest_message_alarm_outlasts_a_delay_three_long_attempts_and_their_backoffs(aws_template: Template):
    ages = [a for a in _alarms(aws_template).values() if a["MetricName"] == "ApproximateAgeOfOldestMessage"]
    healthy_worst = (
        settings.MAX_SQS_DELAY_SECONDS + 3 * AWS.job_timeout_ceiling_seconds + 2 * settings.RETRY_BACKOFF_CAP_SECONDS
    )
    assert len(ages) == len(Priority)  # one per priority lane: each has pollers of its own
    assert all(age["Threshold"] == AWS.oldest_message_age_alarm_seconds > healthy_worst for age in ages)


def _resolved_arn_pattern(value: object) -> str:
    """An Fn::Join ARN as text, each intrinsic written as its name (`<AWS::AccountId>`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_resolved_arn_pattern(part) for part in parts)
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    raise AssertionError(f"unexpected ARN part {value!r}")


def _publish_allowed(template: Template, topic_id: str, alarm_name: str) -> bool:
    """Whether the topic's policy lets CloudWatch publish this account's alarm (and no Deny stops it)."""
    policies = [
        p["Properties"]
        for p in template.find_resources("AWS::SNS::TopicPolicy").values()
        if {"Ref": topic_id} in p["Properties"]["Topics"]
    ]
    statements = [s for p in policies for s in p["PolicyDocument"]["Statement"]]
    for deny in (s for s in statements if s["Effect"] == "Deny"):
        # The TLS-only Deny: CloudWatch publishes over TLS, so it never applies to it.
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}, deny
    for allow in (s for s in statements if s["Effect"] == "Allow"):
        if allow.get("Principal") != {"Service": "cloudwatch.amazonaws.com"} or "sns:Publish" not in _actions(allow):
            continue
        assert allow["Resource"] == {"Ref": topic_id}
        condition = allow["Condition"]
        assert condition["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
        alarm_arn = f"arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:{alarm_name}"
        return alarm_arn in {_resolved_arn_pattern(arn) for arn in condition["ArnEquals"]["aws:SourceArn"]}
    return False


def test_every_alarm_action_reaches_a_topic_that_lets_cloudwatch_publish(
    aws_template: Template, local_template: Template
):
    """Alarm -> action -> topic -> topic policy (-> key policy, if the topic were encrypted): a topic
    policy with only a Deny would let no alarm notify anyone, and nothing in the emulator would show it."""
    for template in (aws_template, local_template):
        topics = template.find_resources("AWS::SNS::Topic")
        for alarm in _alarms(template).values():
            for action in alarm["AlarmActions"] + alarm["OKActions"]:
                topic_id = action["Ref"]
                assert topic_id in topics, action
                assert "KmsMasterKeyId" not in topics[topic_id]["Properties"], "a key policy must admit CloudWatch"
                assert _publish_allowed(template, topic_id, alarm["AlarmName"]), alarm["AlarmName"]


def test_an_alarm_of_another_deployment_may_not_publish_to_this_topic(aws_template: Template):
    (topic_id,) = aws_template.find_resources("AWS::SNS::Topic")
    assert not _publish_allowed(aws_template, topic_id, "someone-elses-alarm")
    assert not _publish_allowed(aws_template, topic_id, settings.names("prod").alarm("WorkerErrors"))


# Scheduler ------------------------------------------------------------------------------------------


def _statements_of_role(template: Template, role_id: str) -> list[dict]:
    policies = template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": Match.array_with([{"Ref": role_id}])}}
    )
    return [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]


def _policy_statements_of_role(template: Template, role_name: str) -> list[dict]:
    roles = template.find_resources("AWS::IAM::Role", {"Properties": {"RoleName": role_name}})
    assert len(roles) == 1, roles
    (role_id,) = roles
    return _statements_of_role(template, role_id)


def _actions(statement: dict) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else actions


def test_schedules_live_in_their_group_and_scheduler_may_only_send_to_the_queues(
    aws_template: Template, local_template: Template
):
    for template in (aws_template, local_template):
        template.has_resource_properties("AWS::Scheduler::ScheduleGroup", {"Name": settings.SCHEDULE_GROUP})
        template.has_resource_properties(
            "AWS::IAM::Role",
            {
                "RoleName": settings.SCHEDULER_ROLE_NAME,
                "AssumeRolePolicyDocument": {
                    "Statement": Match.array_with(
                        [Match.object_like({"Principal": {"Service": "scheduler.amazonaws.com"}})]
                    )
                },
            },
        )
        statements = _policy_statements_of_role(template, settings.SCHEDULER_ROLE_NAME)
        assert statements, "the scheduler role has no policy"
        for statement in statements:
            assert set(_actions(statement)) <= {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}


def test_scheduler_may_assume_its_role_only_for_corrals_schedule_group_in_this_account(aws_template: Template):
    role = _only(aws_template, "AWS::IAM::Role", {"RoleName": settings.SCHEDULER_ROLE_NAME})
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    condition = statement["Condition"]
    assert condition["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source_arns = json.dumps(condition["ArnLike"]["aws:SourceArn"])
    assert f":schedule-group/{settings.SCHEDULE_GROUP}" in source_arns
    assert f":schedule/{settings.SCHEDULE_GROUP}/*" in source_arns


def test_only_the_api_may_create_schedules_and_pass_the_scheduler_role_the_worker_only_its_wake_timers(
    aws_template: Template,
):
    api_statements = _policy_statements_of_role_of_function(aws_template, settings.API_FUNCTION)
    worker_statements = _policy_statements_of_role_of_function(aws_template, settings.WORKER_FUNCTION)

    def grants(statements: list[dict], action: str) -> bool:
        return any(action in _actions(s) for s in statements)

    assert grants(api_statements, "scheduler:CreateSchedule")
    assert grants(api_statements, "iam:PassRole")
    # The worker creates and deletes durable jobs' wake timers (`w-*` in the group) and nothing else of Scheduler.
    creating = [s for s in worker_statements if "scheduler:CreateSchedule" in _actions(s)]
    wake_actions = {"scheduler:CreateSchedule", "scheduler:DeleteSchedule"}
    assert creating and all(set(_actions(s)) <= wake_actions for s in creating)
    assert all("/w-*" in json.dumps(s["Resource"]) for s in creating)


def _policy_statements_of_role_of_function(template: Template, function_name: str) -> list[dict]:
    function = _only(template, "AWS::Lambda::Function", {"FunctionName": function_name})
    return _statements_of_role(template, function["Properties"]["Role"]["Fn::GetAtt"][0])


def test_the_api_reads_queue_counts_and_metrics_for_the_operator_view_and_nothing_more(aws_template: Template):
    statements = _policy_statements_of_role_of_function(aws_template, settings.API_FUNCTION)
    wildcard = [s for s in statements if s.get("Resource") == "*"]
    # X-Ray's writes have no resource-level form either (active tracing, acknowledged for cdk-nag).
    wildcard_actions = {action for statement in wildcard for action in _actions(statement)}
    assert wildcard_actions == {"cloudwatch:GetMetricData", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}
    readers = [s for s in statements if "sqs:GetQueueAttributes" in _actions(s)]
    assert readers and all(s.get("Resource") != "*" for s in readers)
    assert len(aws_template.find_outputs("DashboardUrl")) == 1


# Least privilege ------------------------------------------------------------------------------------


def _function_statements(template: Template) -> dict[str, list[dict]]:
    return {
        name: _policy_statements_of_role_of_function(template, name)
        for name in (settings.API_FUNCTION, settings.WORKER_FUNCTION)
    }


def _allows(statements: list[dict], action: str) -> bool:
    return any(s.get("Effect", "Allow") == "Allow" and action in _actions(s) for s in statements)


def _leading_key_denials(statements: list[dict]) -> list[str]:
    """The key patterns whose item writes (PutItem) a role is denied."""
    found: list[str] = []
    for statement in statements:
        if statement.get("Effect") == "Deny" and "dynamodb:PutItem" in _actions(statement):
            patterns = statement.get("Condition", {}).get("ForAnyValue:StringLike", {}).get("dynamodb:LeadingKeys", [])
            found += [patterns] if isinstance(patterns, str) else patterns
    return found


def _denies_outright(statements: list[dict], action: str) -> bool:
    return any(s.get("Effect") == "Deny" and action in _actions(s) and not s.get("Condition") for s in statements)


def test_no_function_may_scan_batch_write_or_read_streams_and_only_the_worker_may_batch_read(
    aws_template: Template, local_template: Template
):
    for template in (aws_template, local_template):
        functions = _function_statements(template)
        for name, statements in functions.items():
            for action in ("dynamodb:Scan", "dynamodb:BatchWriteItem", "dynamodb:GetRecords"):
                assert not _allows(statements, action), (name, action)
                assert _denies_outright(statements, action), (name, action)
            assert not _allows(statements, "dynamodb:*"), name
            assert _allows(statements, "dynamodb:UpdateItem") and _allows(statements, "dynamodb:Query"), name
        # An event's triggers are read in the worker, up to 100 a call (shared/store/flow/trigger_items.py).
        worker, api = functions[settings.WORKER_FUNCTION], functions[settings.API_FUNCTION]
        assert _allows(worker, "dynamodb:BatchGetItem") and not _denies_outright(worker, "dynamodb:BatchGetItem")
        assert not _allows(api, "dynamodb:BatchGetItem") and _denies_outright(api, "dynamodb:BatchGetItem")


_TABLE_CALL = re.compile(
    r"\.(batch_get_item|batch_write_item|get_item|put_item|update_item|delete_item|query|scan|transact_write_items"
    r"|transact_get_items|execute_statement|execute_transaction|batch_execute_statement)\("
)
# IAM authorises a transaction as the item actions in it.
_AUTHORISED_AS = {
    "transact_write_items": ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
    "transact_get_items": ("dynamodb:GetItem",),
}


def test_every_table_call_the_code_makes_is_one_a_functions_role_holds(aws_template: Template):
    """The emulator enforces no IAM: a call every role is denied passes each local test and fails only on AWS."""
    sources = [*(ROOT / "shared").rglob("*.py"), *(ROOT / "functions").rglob("*.py")]
    called = {call for path in sources for call in _TABLE_CALL.findall(path.read_text())}
    assert {"get_item", "update_item", "batch_get_item"} <= called  # the scan found the code's calls
    functions = _function_statements(aws_template)
    for call in sorted(called):
        actions = _AUTHORISED_AS.get(call, ("dynamodb:" + "".join(part.title() for part in call.split("_")),))
        for action in actions:
            held = [
                name
                for name, statements in functions.items()
                if _allows(statements, action) and not _denies_outright(statements, action)
            ]
            assert held, f"the code calls {call}, but no function's role may {action}"


def test_no_function_may_write_api_or_operator_keys_or_tenants(aws_template: Template, local_template: Template):
    for template in (aws_template, local_template):
        for name, statements in _function_statements(template).items():
            denied = _leading_key_denials(statements)
            for prefix in (keys.API_KEY, keys.OPERATOR_KEY, keys.TENANT):
                assert f"{prefix}*" in denied, (name, prefix, denied)
        worker = _function_statements(template)[settings.WORKER_FUNCTION]
        assert {f"{keys.SCHEDULE}*", f"{keys.RATE_WINDOW}*"} <= set(_leading_key_denials(worker))
        api = _function_statements(template)[settings.API_FUNCTION]
        assert f"{keys.JOB}*" not in _leading_key_denials(api)  # cancel and retry write job records
        assert f"{keys.RUNNING}*" in _leading_key_denials(api)  # only the worker's batches take running slots
        assert f"{keys.RUNNING}*" not in _leading_key_denials(worker)


def test_dax_reaches_job_items_only_and_the_functions_use_only_its_item_calls(aws_template: Template):
    role = _only(aws_template, "AWS::IAM::Role", {"Description": "DAX -> jobs table"})
    (role_id,) = [
        logical_id for logical_id, found in aws_template.find_resources("AWS::IAM::Role").items() if found == role
    ]
    statements = _statements_of_role(aws_template, role_id)
    item_statements = [s for s in statements if set(_actions(s)) - {"dynamodb:DescribeTable"}]
    assert item_statements
    for statement in item_statements:
        assert set(_actions(statement)) <= {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
        assert statement["Condition"] == {
            "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{keys.JOB}*"]},
            "Null": {"dynamodb:LeadingKeys": "false"},  # ForAllValues alone holds for a request with no key
        }
    for name, function_statements in _function_statements(aws_template).items():
        dax = {a for s in function_statements for a in _actions(s) if a.startswith("dax:")}
        assert dax == {"dax:GetItem", "dax:PutItem", "dax:UpdateItem"}, name


def test_passing_the_scheduler_role_is_for_scheduler_only(aws_template: Template):
    statements = _policy_statements_of_role_of_function(aws_template, settings.API_FUNCTION)
    (pass_role,) = [s for s in statements if "iam:PassRole" in _actions(s)]
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}


def test_function_code_may_not_make_network_interfaces_nor_write_other_log_groups(aws_template: Template):
    for name, statements in _function_statements(aws_template).items():
        function = _only(aws_template, "AWS::Lambda::Function", {"FunctionName": name})
        role = aws_template.to_json()["Resources"][function["Properties"]["Role"]["Fn::GetAtt"][0]]
        assert "AWSLambda" not in json.dumps(role["Properties"].get("ManagedPolicyArns", [])), name
        managed = aws_template.find_resources("AWS::IAM::ManagedPolicy")
        plumbing = [
            s
            for reference in role["Properties"]["ManagedPolicyArns"]
            for s in managed[reference["Ref"]]["Properties"]["PolicyDocument"]["Statement"]
        ]
        denials = [s for s in plumbing if s.get("Effect") == "Deny" and "ec2:CreateNetworkInterface" in _actions(s)]
        assert len(denials) == 1, name
        source = json.dumps(denials[0]["Condition"]["ArnLike"]["lambda:SourceFunctionArn"])
        assert f":function:{name}" in source, name
        for statement in statements:
            if any(action.startswith("logs:") for action in _actions(statement)):
                assert statement["Resource"] != "*", (name, statement)


def test_only_the_workers_and_scheduler_bury_in_the_dlq_only_scheduler_sends_to_the_backstop(
    aws_template: Template,
):
    """Scheduler's role may still send to the DLQ: schedules made before the backstop name it as their
    dead-letter target until they are next updated. The DLQ takes SQS's redrive from the backstop alone, the
    backstop from the three priority lanes' queues."""
    api = _only(aws_template, "AWS::Lambda::Function", {"FunctionName": settings.API_FUNCTION})
    for name, logical_prefix, sid, source, allowed in (
        (
            settings.DLQ_NAME,
            "QueueDeadLetters",
            "OnlyCorralBuries",
            [settings.BACKSTOP_NAME],
            ("WorkersHandler", "Schedules"),
        ),
        (
            settings.BACKSTOP_NAME,
            "QueueBackstop",
            "OnlySchedulerFails",
            [level.queue_name(settings.names()) for level in Priority],
            ("Schedules",),
        ),
    ):
        allow = _only(aws_template, "AWS::SQS::Queue", {"QueueName": name})["Properties"]["RedriveAllowPolicy"]
        assert allow["redrivePermission"] == "byQueue"
        assert len(allow["sourceQueueArns"]) == len(source), name
        assert all(json.dumps(allow["sourceQueueArns"]).count(f':{each}"') == 1 for each in source), name
        statements = _queue_policy_statements(aws_template, logical_prefix)
        (deny,) = [s for s in statements if s.get("Sid") == sid]
        assert deny["Effect"] == "Deny" and _actions(deny) == ["sqs:SendMessage"]
        senders = deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
        assert len(senders) == len(allowed) and all(sender in json.dumps(senders) for sender in allowed), name
        assert api["Properties"]["Role"]["Fn::GetAtt"][0] not in json.dumps(senders)


# Stages and deploy safety ---------------------------------------------------------------------------

# The property that holds each resource type's physical name (IAM policies' names are the stack's own).
PHYSICAL_NAME = {
    "AWS::DynamoDB::GlobalTable": "TableName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::Scheduler::ScheduleGroup": "Name",
    "AWS::IAM::Role": "RoleName",
    "AWS::DAX::SubnetGroup": "SubnetGroupName",
    "AWS::DAX::Cluster": "ClusterName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::ApiGatewayV2::Api": "Name",
    "AWS::SNS::Topic": "TopicName",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::Logs::LogGroup": "LogGroupName",
}


def _physical_names(template: dict) -> set[str]:
    """Every physical name the template gives (a Region in a name written as `<AWS::Region>`)."""
    found = set()
    for resource in template["Resources"].values():
        key = PHYSICAL_NAME.get(resource["Type"])
        value = resource.get("Properties", {}).get(key) if key else None
        if value is not None and (isinstance(value, str) or "Fn::Join" in value):
            found.add(_resolved_arn_pattern(value))
    return found


def test_two_stages_deploy_side_by_side_every_name_prefixed_none_colliding(
    staged: dict[str, Synthesized], aws_template: Template
):
    prod, dev = (_physical_names(staged[stage].template) for stage in ("prod", "dev"))
    unstaged = _physical_names(aws_template.to_json())
    assert prod and dev and not (prod & dev) and not (prod & unstaged) and not (dev & unstaged)
    for stage, names in (("prod", prod), ("dev", dev)):
        stage_names = settings.names(stage)
        strays = {n for n in names if n != stage_names.stack and not n.startswith(stage_names.prefix)}
        assert strays == set(), stage
        assert f"{stage_names.scheduler_role}-<AWS::Region>" in names  # IAM names are account-wide
        assert f"{stage_names.dashboard}-<AWS::Region>" in names  # and so are dashboards
        assert {stage_names.table, stage_names.queue, stage_names.dax_cluster} <= names
        for function in _functions(Template.from_json(staged[stage].template)).values():
            assert function["Properties"]["Environment"]["Variables"]["CORRAL_STAGE"] == stage


def test_without_a_stage_the_names_an_existing_stack_has_stay(aws_template: Template):
    """Renaming the table, group or scheduler role would replace them, and with them every record and schedule."""
    names = _physical_names(aws_template.to_json())
    assert {"corral-jobs", "corral-jobs-dlq", "corral", "corral-scheduler", "corral-status", "corral-api"} <= names


def test_a_stage_name_that_would_break_a_physical_name_is_refused():
    for bad in ("Prod", "staging", "1st", "pr-1", ""):
        if bad:
            with pytest.raises(ValueError):
                settings.names(bad)
    assert len(settings.names("abcdef").dax_cluster) <= 20


def test_the_aws_stack_is_protected_from_termination_and_the_local_one_is_not(
    synthesized: dict[str, Synthesized],
):
    for profile, protected in (("aws", True), ("local", False)):
        manifest = json.loads((synthesized[profile].template_path.parent / "manifest.json").read_text())
        properties = manifest["artifacts"][settings.STACK_NAME]["properties"]
        assert properties.get("terminationProtection", False) is protected, profile


# Tracing --------------------------------------------------------------------------------------------


def test_both_functions_trace_actively_on_aws_and_the_emulators_load_no_x_ray(
    aws_template: Template, local_template: Template
):
    for template, mode, disabled in ((aws_template, "Active", "false"), (local_template, None, "true")):
        functions = _functions(template).values()
        assert len(functions) == 2
        for function in functions:
            properties = function["Properties"]
            assert properties.get("TracingConfig", {}).get("Mode") == mode
            assert properties["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == disabled
    for name, statements in _function_statements(aws_template).items():
        assert _allows(statements, "xray:PutTraceSegments"), name


# Dashboard ------------------------------------------------------------------------------------------


def test_the_operations_dashboard_shows_the_benchmarks_figures(aws_template: Template, local_template: Template):
    figures = (
        '"Latency"',  # API p99
        '"EnqueueToStartLatency"',  # enqueue-to-run p99
        '"ApproximateNumberOfMessagesVisible"',  # queue depth
        '"ApproximateNumberOfMessagesNotVisible"',  # in flight
        '"ApproximateAgeOfOldestMessage"',
        '"StoreHandBacks"',  # hand-backs
        '"JobsDead"',  # dead by reason
        '"UnreadableMessages"',
        "DeadLettersByTenant",  # dead by tenant (a SEARCH)
    )
    for template in (aws_template, local_template):
        dashboard = _only(template, "AWS::CloudWatch::Dashboard")["Properties"]
        assert dashboard["DashboardName"] == settings.names().dashboard
        body = json.dumps(dashboard["DashboardBody"]).replace('\\"', '"')
        for figure in figures:
            assert figure in body, figure
    assert "AWS/DAX" in json.dumps(_only(aws_template, "AWS::CloudWatch::Dashboard")["Properties"])


ADOT = "arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-python-amd64-ver-1-32-0:2"


def test_opentelemetry_export_is_off_unless_asked_and_then_every_function_runs_under_the_adot_wrapper(
    aws_template: Template, tmp_path
) -> None:
    def corrals(resources: dict) -> list[dict]:  # corral's functions (not CDK's own custom-resource handlers)
        return [
            resource["Properties"]
            for resource in resources.values()
            if resource["Type"] == "AWS::Lambda::Function"
            and "POWERTOOLS_SERVICE_NAME" in resource["Properties"].get("Environment", {}).get("Variables", {})
        ]

    for function in corrals(aws_template.to_json()["Resources"]):
        assert "AWS_LAMBDA_EXEC_WRAPPER" not in function["Environment"]["Variables"]

    template = synth("aws", tmp_path, context={"corral:otel_layer": ADOT}).template
    functions = corrals(template["Resources"])
    assert {function["FunctionName"] for function in functions} >= {"corral-api", "corral-worker"}
    for function in functions:
        variables = function["Environment"]["Variables"]
        assert ADOT in function["Layers"]
        assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/otel-instrument"
        assert variables["POWERTOOLS_TRACE_DISABLED"] == "true"  # OpenTelemetry instead of the X-Ray SDK
        assert function["TracingConfig"] == {"Mode": "Active"}


@pytest.mark.parametrize(
    ("profile", "arn", "why"),
    [("local", ADOT, "for the aws profile"), ("aws", "adot-please", "not a Lambda layer version ARN")],
)
def test_an_opentelemetry_layer_the_profile_cannot_use_fails_the_synth_saying_why(profile, arn, why, tmp_path) -> None:
    with pytest.raises(SystemExit, match=why):
        synth(profile, tmp_path, context={"corral:otel_layer": arn})


def test_a_test_stack_lowers_the_receive_budget_and_the_wait_resend_with_it(tmp_path):
    template = Template.from_json(synth("local", tmp_path, context={"corral:receive_budget": "10"}).template)
    redrive = _only(template, "AWS::SQS::Queue", {"QueueName": settings.QUEUE_NAME})["Properties"]["RedrivePolicy"]
    variables = _only(template, "AWS::Lambda::Function", {"FunctionName": settings.WORKER_FUNCTION})["Properties"][
        "Environment"
    ]["Variables"]
    assert redrive["maxReceiveCount"] == 10
    assert (variables["CORRAL_RECEIVE_BUDGET"], variables["CORRAL_WAIT_RESEND_AT"]) == ("10", "6")
    with pytest.raises(ValueError, match="at least"):
        LOCAL.with_receive_budget(2)


def test_the_workers_token_urls_are_absolute_on_aws_and_the_path_alone_on_the_emulator(
    aws_template: Template, local_template: Template
):
    """The worker mints a token's URL with the API's address (the API's own function is not told it: the API
    depends on that function, so it would be a cycle); the emulator's API is not where CloudFormation says."""
    (http_api,) = aws_template.find_resources("AWS::ApiGatewayV2::Api")
    for template, absolute in ((aws_template, True), (local_template, False)):
        functions = _functions(template)
        worker = _only(template, "AWS::Lambda::Function", {"FunctionName": settings.WORKER_FUNCTION})["Properties"]
        api_url = worker["Environment"]["Variables"]["CORRAL_API_URL"]
        assert (api_url != "") is absolute
        if absolute:
            assert http_api in json.dumps(api_url)
        others = [each["Properties"] for each in functions.values()]
        others = [each for each in others if each.get("FunctionName") != settings.WORKER_FUNCTION]
        assert others and all(
            each.get("Environment", {}).get("Variables", {}).get("CORRAL_API_URL", "") == "" for each in others
        )
