"""cdk-nag findings (the AwsSolutions and Serverless packs) acknowledged on purpose, each with its reason.

One place, so a reviewer reads every exception the stack makes. Each function is
called where its construct is built; tests/infra/test_checks.py (cdk-nag on both profiles) lists anything new.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct


def _acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    # A function's findings about its permissions are on its role, which is built beside it.
    role = getattr(construct, "role", None) if isinstance(construct, lambda_.Function) else None
    for target in (construct, role) if role is not None else (construct,):
        Validations.of(target).acknowledge(Acknowledgment(id=rule, reason=reason))


_PYTHON_311 = (
    "Python 3.11 on purpose: the embedded emulator runs handlers on its own 3.11 interpreter, so the "
    "bundle tested locally is the bundle shipped (docs/decisions/production-stack.md)."
)


def lambda_function(function: lambda_.Function, *, traced: bool, customer_code: bool = False) -> None:
    _acknowledge(function, "AwsSolutions::AwsSolutions-L1", _PYTHON_311)
    _acknowledge(function, "Serverless::Serverless-LambdaLatestVersion", _PYTHON_311)
    _acknowledge(
        function,
        "Serverless::Serverless-LambdaDLQ",
        "A function dead-letter queue takes failed asynchronous invokes only. API Gateway invokes the API "
        "synchronously; the worker is invoked by its SQS event source, whose dead letters are the jobs "
        "queue's redrive policy and the worker's own burial in the DLQ (docs/decisions/dead-jobs-and-the-dlq.md).",
    )
    if not traced:
        _acknowledge(
            function,
            "Serverless::Serverless-LambdaTracing",
            "The jobs function runs a customer's code: tracing would let it write any segment into the account's "
            "traces (xray:PutTraceSegments has no resource form); the worker's trace shows each invoke of it "
            "(docs/decisions/tracing.md)."
            if customer_code
            else "The local profile deploys into the emulator, which has no X-Ray; the aws profile traces "
            "(docs/decisions/tracing.md).",
        )


def sqs_event_source(function: lambda_.Function) -> None:
    for mapping in function.node.find_all():
        if isinstance(mapping, lambda_.CfnEventSourceMapping):
            _acknowledge(
                mapping,
                "Serverless::Serverless-LambdaEventSourceMappingDestination",
                "An SQS event source has no on-failure destination: a message that fails returns to the queue, "
                "and the queue's redrive policy (to the backstop, and from it to the DLQ) and the worker's "
                "burial in the DLQ are its dead letters.",
            )


def dead_letter_queue(dlq: IConstruct) -> None:
    _acknowledge(
        dlq,
        "Serverless::Serverless-SQSRedrivePolicy",
        "This is the dead-letter queue itself; nothing consumes it but an operator's redrive (corral dlq redrive).",
    )


def xray_writer(function: lambda_.Function) -> None:
    _acknowledge(
        function,
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        "xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions (AWS's service "
        "authorization reference); active tracing needs them to send the function's segments.",
    )


def network_interfaces(role: IConstruct) -> None:
    _acknowledge(
        role,
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        "Lambda creates the network interfaces that put the function in the VPC with its role, and EC2's "
        "interface actions have no resource-level form; a Deny keyed on lambda:SourceFunctionArn keeps them "
        "from the function's own code (infra/functions.py).",
    )


def table_grantee(grantee: IConstruct, table: dynamodb.TableV2) -> None:
    """`table.grant_read_write_data` also grants the table's indexes as `<table>/index/*`."""
    logical_id = Stack.of(table).resolve(table.node.default_child.logical_id)  # type: ignore[union-attr]
    _acknowledge(
        grantee,
        f"AwsSolutions::AwsSolutions-IAM5[Resource::<{logical_id}.Arn>/index/*]",
        "The wildcard is the jobs table's own indexes (CDK's grant covers every GSI of this one table, so a "
        "new index needs no policy change); no other table or account is reachable through it.",
    )


def http_api_default_route(api: apigwv2.HttpApi) -> None:
    _acknowledge(
        api.node.find_child("DefaultRoute"),
        "AwsSolutions::AwsSolutions-APIG4",
        "Authorised in the API Lambda: `Authorization: Bearer <api key>`, keys stored as SHA-256 per tenant and "
        "cached per instance (functions/api/auth.py). A Lambda authorizer would add an invocation to every "
        "enqueue (the latency SLO) for the same check; Cognito/IAM do not fit customer API keys.",
    )


def schedule_manager(grantee: IConstruct, group: str) -> None:
    """The API creates and deletes customers' schedules: one Scheduler schedule per schedule, named at run time."""
    _acknowledge(
        grantee,
        "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:"
        f"schedule/{group}/*]",
        f"Schedules are created at run time, one per customer schedule or delayed job, so their names are not "
        f"known at deploy time; the wildcard is limited to corral's own schedule group '{group}'.",
    )


def wake_timer_manager(grantee: IConstruct, group: str) -> None:
    """The worker creates and deletes durable jobs' wake timers: one-time schedules named `w-<job id>-...`."""
    _acknowledge(
        grantee,
        "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:"
        f"schedule/{group}/w-*]",
        "A waiting durable job's wake timer is a one-time schedule named for the job at run time; the wildcard is "
        f"limited to the `w-` schedules of corral's own group '{group}' (shared/worker/run/wake_timer.py).",
    )


def metric_reader(function: lambda_.Function) -> None:
    _acknowledge(
        function,
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        "cloudwatch:GetMetricData has no resource-level permissions (AWS's service authorization reference); "
        "the operator view reads the queue's and worker's metrics with it, and nothing else is granted on '*'.",
    )


def lambda_targets(grantee: IConstruct, patterns: tuple[str, ...]) -> None:
    """The worker may invoke exactly the operator's allowed Lambda targets, with any qualifier."""
    reason = (
        "The operator's own allowlist of Lambda targets (CDK context corral:lambda_targets): each pattern as "
        "written, and with ':*' for its aliases and versions; the API and worker refuse any other function."
    )
    for pattern in patterns:
        arn = (
            pattern
            if pattern.startswith("arn:")
            else (f"arn:<AWS::Partition>:lambda:<AWS::Region>:<AWS::AccountId>:function:{pattern}")
        )
        for resource in (arn, f"{arn}:*"):
            if "*" in resource or "?" in resource:
                _acknowledge(grantee, f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]", reason)


def customer_code_acl(acl: IConstruct) -> None:
    _acknowledge(
        acl,
        "AwsSolutions::AwsSolutions-VPC3",
        "The jobs function's subnets hold customer code alone: the ACL keeps private routes an operator adds "
        "for the worker's private hosts (peering, Transit Gateway, VPN) from it, whatever its security group "
        "allows (docs/decisions/egress.md).",
    )
