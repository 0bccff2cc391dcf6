"""The corral stack: API, queue + DLQ, workers, jobs store, schedules, alarms; the jobs function when a customer's
job package is deployed; on AWS also the VPC and the DAX cache."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from aws_cdk import CfnResource, RemovalPolicy, Stack, Tags
from aws_cdk import aws_logs as logs
from constructs import Construct, Node

from infra import http_targets, jobs_package
from infra.alarms import Alarms, Watched
from infra.api import Api
from infra.cache import StatusCache
from infra.capacity import Capacity
from infra.dashboard import OperationsDashboard
from infra.functions import FunctionFactory
from infra.jobs_function import deploy_if_needed
from infra.jobs_package import JobsPackage
from infra.lambda_targets import LambdaTargets
from infra.network import Network
from infra.parts import StackParts
from infra.queue import JobQueue
from infra.schedule_group import Schedules
from infra.store import JobStore
from infra.workers import Workers
from shared import profiles
from shared.environment import FunctionEnv, variable
from shared.profiles import Profile
from shared.settings import ResourceNames


class CorralStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        names: ResourceNames,
        profile: Profile,
        extra_function_env: dict[str, str],
        jobs: Sequence[JobsPackage] = (),
        lambda_targets: LambdaTargets | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        lambda_targets = lambda_targets or LambdaTargets(())
        runs_customer_code = bool(jobs_package.customers(jobs))
        capacity = Capacity.from_context(self.node, runs_customer_code=runs_customer_code)
        store = JobStore(
            self,
            "Store",
            names=names,
            profile=profile,
            deletion_protection=flag_from_context(self.node, "corral:table_deletion_protection", default=True),
        )
        queue = JobQueue(self, "Queue", names=names, profile=profile)
        schedules = Schedules(self, "Schedules", names=names, profile=profile, queue=queue)
        # DAX lives only in a VPC; the emulator has neither, so the local profile has no network and no cache.
        network = Network(self, "Network", customer_code=runs_customer_code) if profile.dax else None
        cache = StatusCache(self, "StatusCache", names=names, network=network, store=store) if network else None
        functions = FunctionFactory(
            self,
            "Functions",
            network=network,
            jobs=jobs,
            aws_services=aws_services_from_context(self.node.try_get_context("corral:aws_services"), profile),
            tracing=profile.production,
            otel_layer_arn=otel_layer_from_context(self.node.try_get_context("corral:otel_layer"), profile),
            function_env=FunctionEnv(
                stage=names.stage,
                table=store.table.table_name,
                **queue.function_env(),
                dlq_url=queue.dlq.queue_url,
                backstop_url=queue.backstop.queue_url,
                lease_seconds=profile.lease_seconds,
                hand_back_max_seconds=profile.visibility_timeout_seconds,
                receive_budget=profile.receive_budget,
                wait_resend_at=profile.wait_resend_at,
                wake_scheduler_threshold_seconds=profile.wake_scheduler_threshold_seconds,
                job_timeout_ceiling=profile.job_timeout_ceiling_seconds,
                lambda_targets=lambda_targets.entries,
                api_key_cache_seconds=profile.api_key_cache_seconds,
                dax_endpoint=cache.endpoint_url if cache else "",
                **schedules.function_env(),
                **http_targets.function_env(self, profile),
            ),
            extra_environment=extra_function_env,
        )
        parts = StackParts(
            names=names, profile=profile, functions=functions, store=store, queue=queue, capacity=capacity
        )
        api = Api(self, "Api", parts)
        schedules.grant_manage(api.function)
        api_role = api.function.role
        assert api_role is not None  # every function built here has its own role
        operator_roles = [
            arn.strip() for arn in str(self.node.try_get_context("corral:operator_roles") or "").split(",")
        ]
        workers = Workers(self, "Workers", parts)
        worker_role = workers.function.role
        assert worker_role is not None
        if profile.production:
            # A token's URL is absolute (shared/durable/tokens.py): the worker mints it with the API's address. The
            # worker's alone: the API function cannot know its own API's address (the API depends on it), and
            # nothing of the API depends on the worker. The emulator's API is not at the address CloudFormation
            # spells, so the local profile keeps the path alone.
            workers.function.add_environment(variable("api_url"), api.http_api.api_endpoint)
        # A durable job's sleep or timeout beyond SQS's delay is a one-time schedule (shared/worker/run/wake_timer.py).
        schedules.grant_wake_timers(workers.function)
        # The workers send outcome messages recorded late (a store outage): shared/worker/complete/completer.py.
        queue.allow_only_senders(
            api_role, schedules.role, worker_role, operator_role_arns=[arn for arn in operator_roles if arn]
        )
        queue.allow_only_dead_letter_senders(worker_role, schedules.role)
        # A customer's job package runs in a function of its own, which the worker invokes: its role holds
        # nothing of corral's (docs/decisions/customer-code-fence.md).
        jobs_function = deploy_if_needed(self, parts)
        lambda_targets.grant_invoke(self, workers.function, jobs_function, names)
        if cache:
            cache.grant_data_access(api.function)
            cache.grant_data_access(workers.function)
        watched = Watched(
            queue=queue,
            store=store,
            http_api=api.http_api,
            worker=workers.function,
            schedule_group=schedules.group_name,
            dax_cluster=cache.cluster_name if cache else None,
            jobs_function=jobs_function,
            nat_gateways=network.nat_gateway_ids if network else (),
            account_concurrency=capacity.account_concurrency if profile.production else None,
        )
        Alarms(self, "Alarms", names=names, profile=profile, watched=watched)
        OperationsDashboard(self, "Operations", names=names, watched=watched)
        # Every resource that takes tags says whose it is: cost allocation and an account's inventory.
        Tags.of(self).add("corral:stage", names.stage or "unstaged")
        Tags.of(self).add("corral:profile", profile.name)
        if network:
            expire_cdk_handler_logs(self)


def expire_cdk_handler_logs(stack: Stack) -> None:
    """CDK's custom-resource handler (it empties the VPC's default security group at deploy time) logs to an
    implicit /aws/lambda group that never expires: give it a group of its own with the stack's retention."""
    for construct in stack.node.children:
        handler = construct.node.try_find_child("Handler")
        if not (isinstance(handler, CfnResource) and handler.cfn_resource_type == "AWS::Lambda::Function"):
            continue
        log_group = logs.LogGroup(
            stack,
            f"{construct.node.id.replace(':', '')}Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        handler.add_property_override("LoggingConfig.LogGroup", log_group.log_group_name)


def function_env_from_context(raw: object) -> dict[str, str]:
    """`-c corral:function_env='{"K": "V"}'`: extra function environment, e.g. local endpoint overrides."""
    if not raw:
        return {}
    return {str(k): str(v) for k, v in (json.loads(raw) if isinstance(raw, str) else raw).items()}


def aws_services_from_context(raw: object, profile: Profile) -> tuple[str, ...] | None:
    """The layer's botocore API models: on the local profile the platform's services plus
    `-c corral:aws_services=s3,sns` (what a customer's jobs call), for cheaper emulator cold starts;
    elsewhere all of them."""
    if profile.name != "local":
        return None
    return tuple(name.strip() for name in str(raw or "").split(",") if name.strip())


def flag_from_context(node: Node, key: str, *, default: bool) -> bool:
    """`-c key=true` or `-c key=false` (anything else fails the synth); absent: the default."""
    raw = node.try_get_context(key)
    if raw in (None, ""):
        return default
    if str(raw).lower() not in ("true", "false"):
        raise SystemExit(f"{key}: {raw!r} is neither true nor false")
    return str(raw).lower() == "true"


def profile_from_context(raw: object) -> Profile:
    name = str(raw or "aws")
    if name not in profiles.PROFILES:
        raise SystemExit(f"unknown corral:profile {name!r}; choose one of {sorted(profiles.PROFILES)}")
    return profiles.PROFILES[name]


def receive_budget_from_context(raw: object, profile: Profile) -> Profile:
    """`-c corral:receive_budget=N`: the jobs queue's maxReceiveCount, lowered for a test stack (the suite waits
    past it); absent: the profile's (100)."""
    if raw in (None, ""):
        return profile
    try:
        return profile.with_receive_budget(int(str(raw)))
    except ValueError as error:
        raise SystemExit(f"corral:receive_budget: {raw!r}: {error}") from error


# arn:aws:lambda:<region>:<account>:layer:<name>:<version>
_LAYER_ARN = re.compile(r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:layer:[A-Za-z0-9_-]+:\d+$")


def otel_layer_from_context(raw: object, profile: Profile) -> str | None:
    """`-c corral:otel_layer=<ARN>`: the ADOT Python layer (AWS publishes an ARN per Region and version:
    docs/deploy.md) that exports the functions' traces with OpenTelemetry. On the aws profile only: the
    emulator has no X-Ray to export to and cannot fetch AWS's layers."""
    if raw in (None, ""):
        return None
    arn = str(raw)
    if not profile.production:
        raise SystemExit("corral:otel_layer: OpenTelemetry export is for the aws profile (-c corral:profile=aws)")
    if not _LAYER_ARN.match(arn):
        raise SystemExit(
            f"corral:otel_layer: {arn!r} is not a Lambda layer version ARN (arn:aws:lambda:...:layer:name:N)"
        )
    return arn
