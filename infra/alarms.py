"""Alarms: what pages someone. Each alarm notifies one SNS topic when it fires and when it clears
(subscribe on-call to the topic). Thresholds and their reasons: shared/settings.py and
docs/decisions/alarms.md.

Plain metric alarms only (no metric math), so the emulator deploys them too. A tenant's jobs that
used their attempts page nobody: the worker counts them per tenant (`DeadLettersByTenant`, the
dashboard's), and only dead letters of the platform's own making page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.queue import JobQueue
from infra.store import JobStore
from shared import settings
from shared.profiles import Profile
from shared.settings import ResourceNames
from shared.store import table_schema

ONE_MINUTE = Duration.minutes(1)
FIVE_MINUTES = Duration.minutes(5)
AT_LEAST = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
# The table operations corral's job path makes (claims and outcomes, status reads, quota transactions,
# schedule records); DynamoDB reports SystemErrors per operation.
TABLE_OPERATIONS = ("GetItem", "UpdateItem", "PutItem", "TransactWriteItems")
# The worker's EMF metrics (shared/aws/metrics.py) carry Powertools' `service` dimension.
WORKER_SERVICE = {"service": "corral-worker"}


@dataclass(frozen=True)
class Watched:
    """What the alarms watch: the stack's components, as infra/stack.py built them."""

    queue: JobQueue
    store: JobStore
    http_api: apigwv2.HttpApi
    worker: lambda_.IFunction
    schedule_group: str
    dax_cluster: str | None  # the cluster's name, where there is one (profile aws)
    jobs_function: lambda_.IFunction | None = None  # where a customer's jobs package is deployed
    nat_gateways: tuple[str, ...] = ()  # their ids, where there is a VPC (profile aws)
    account_concurrency: int | None = None  # the Region's Lambda concurrency quota (profile aws)


class Alarms(Construct):
    def __init__(self, scope: Construct, id: str, *, names: ResourceNames, profile: Profile, watched: Watched) -> None:
        super().__init__(scope, id)
        self.names = names
        # enforce_ssl adds a Deny on publishing without TLS; the Allow below is what lets CloudWatch
        # publish at all (a topic policy with only a Deny lets no service in). Not KMS-encrypted: it
        # carries alarm metadata only, and an encrypted topic would also need a key policy for CloudWatch.
        self.topic = sns.Topic(self, "Topic", topic_name=names.alarm_topic, enforce_ssl=True)
        self.alarms: list[cloudwatch.Alarm] = []
        self._api(watched.http_api)
        self._queue(watched.queue, profile)
        self._worker(watched.worker)
        self._table(watched.store)
        self._scheduler(watched.schedule_group)
        if watched.dax_cluster:
            self._dax(watched.dax_cluster)
        if watched.jobs_function is not None:
            self._jobs_function(watched.jobs_function)
        self._nat_gateways(watched.nat_gateways)
        if watched.account_concurrency is not None:
            self._account_concurrency(watched.account_concurrency)
        self.topic.add_to_resource_policy(self._cloudwatch_may_publish())

    def _cloudwatch_may_publish(self) -> iam.PolicyStatement:
        """This deployment's alarms, each by its ARN, and no one else: not a name pattern, because the
        unstaged names' `corral-*` would also admit every stage's alarms (`corral-prod-*`)."""
        stack = Stack.of(self)
        alarm_arns = [
            stack.format_arn(
                service="cloudwatch",
                resource="alarm",
                resource_name=self.names.alarm(alarm.node.id),
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for alarm in self.alarms
        ]
        return iam.PolicyStatement(
            sid="CloudWatchAlarmsPublish",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["sns:Publish"],
            resources=[self.topic.topic_arn],
            conditions={
                "StringEquals": {"aws:SourceAccount": stack.account},
                "ArnEquals": {"aws:SourceArn": alarm_arns},
            },
        )

    def _api(self, http_api: apigwv2.HttpApi) -> None:
        self._alarm(
            "ApiServerErrors",
            f"over {settings.ALARM_API_5XX_RATE:.0%} of API requests answered 5xx for 10 minutes",
            http_api.metric_server_error(period=FIVE_MINUTES, statistic="Average"),
            threshold=settings.ALARM_API_5XX_RATE,
            evaluation_periods=2,
        )
        self._alarm(
            "ApiLatencyP99",
            f"API p99 latency over {settings.ALARM_API_P99_LATENCY_MS} ms for 15 minutes",
            http_api.metric_latency(period=FIVE_MINUTES, statistic="p99"),
            threshold=settings.ALARM_API_P99_LATENCY_MS,
            evaluation_periods=3,
        )

    def _queue(self, queue: JobQueue, profile: Profile) -> None:
        age = profile.oldest_message_age_alarm_seconds
        for level, lane in queue.lanes.items():  # each priority lane has pollers of its own: a lane nobody drains
            self._alarm(
                "OldestMessageAge" + level.queue_suffix.title().replace("-", ""),
                f"a {level} message has waited {age} s, longer than a delay, three 15-minute attempts and their "
                "backoffs take: nobody receives it",
                lane.metric_approximate_age_of_oldest_message(period=FIVE_MINUTES, statistic="Maximum"),
                threshold=age,
            )
        self._alarm(
            "QueueBacklog",
            f"at least {settings.ALARM_BACKLOG_MESSAGES:,} jobs waiting for a worker all through 5 minutes: "
            "the workers are not draining the queue",
            queue.queue.metric_approximate_number_of_messages_visible(period=ONE_MINUTE, statistic="Minimum"),
            threshold=settings.ALARM_BACKLOG_MESSAGES,
            evaluation_periods=5,
        )
        self._alarm(
            "PlatformDeadLetters",
            "the worker put an unreadable or unverifiable message in the DLQ, or recorded dead a job whose "
            "message reached the backstop with no outcome (a platform fault, not a tenant's failing job: those "
            "are DeadLettersByTenant)",
            self._worker_metric("PlatformDeadLetters"),
            threshold=settings.ALARM_PLATFORM_DEAD_LETTERS_PER_5_MIN,
        )

    def _worker(self, worker: lambda_.IFunction) -> None:
        self._alarm(
            "WorkerErrors",
            "worker invocations failed as a whole (crash or timeout), not single jobs",
            worker.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
            threshold=settings.ALARM_WORKER_ERRORS_PER_5_MIN,
        )
        self._alarm(
            "WorkerThrottles",
            "worker invocations were throttled (account concurrency); throttled receives count toward maxReceiveCount",
            worker.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
            threshold=settings.ALARM_WORKER_THROTTLES_PER_5_MIN,
        )
        self._alarm(
            "StoreHandBacks",
            "for 10 minutes the workers handed deliveries back because the store failed: an outage, not a blip",
            self._worker_metric("StoreHandBacks"),
            threshold=settings.ALARM_STORE_HAND_BACKS_PER_5_MIN,
            evaluation_periods=2,
        )

    def _table(self, store: JobStore) -> None:
        table = {"TableName": store.table.table_name}
        # The table's own throttles, and each index's: DynamoDB reports an index's under its name, and a
        # write the index throttles throttles the table write that feeds it.
        throttled = {"Table": table} | {
            f"Index{index.name.title()}": {**table, "GlobalSecondaryIndexName": index.name}
            for index in table_schema.INDEXES
        }
        for where, dimensions in throttled.items():
            what = (
                "the jobs table"
                if where == "Table"
                else f"the jobs table's index {dimensions['GlobalSecondaryIndexName']}"
            )
            for direction in ("Read", "Write"):
                self._alarm(
                    f"{where}{direction}Throttles",
                    f"{what} throttled {direction.lower()}s every minute for 5 minutes",
                    cloudwatch.Metric(
                        namespace="AWS/DynamoDB",
                        metric_name=f"{direction}ThrottleEvents",
                        dimensions_map=dimensions,
                        period=ONE_MINUTE,
                        statistic="Sum",
                    ),
                    threshold=settings.ALARM_TABLE_THROTTLES_PER_MINUTE,
                    evaluation_periods=5,
                )
        for operation in TABLE_OPERATIONS:
            self._alarm(
                f"TableSystemErrors{operation}",
                f"DynamoDB answered {operation} on the jobs table with a server error (HTTP 500)",
                cloudwatch.Metric(
                    namespace="AWS/DynamoDB",
                    metric_name="SystemErrors",
                    dimensions_map={**table, "Operation": operation},
                    period=FIVE_MINUTES,
                    statistic="Sum",
                ),
                threshold=settings.ALARM_TABLE_SYSTEM_ERRORS_PER_5_MIN,
            )

    def _scheduler(self, group: str) -> None:
        def metric(name: str, *, account_wide: bool = False) -> cloudwatch.Metric:
            return _five_minute_sum("AWS/Scheduler", name, None if account_wide else {"ScheduleGroup": group})

        self._alarm(
            "SchedulerTargetErrors",
            "the jobs queue refused schedule firings for 10 minutes (Scheduler retries them)",
            metric("TargetErrorCount"),
            threshold=settings.ALARM_SCHEDULER_ERRORS_PER_5_MIN,
            evaluation_periods=2,
        )
        # Scheduler delays a throttled firing, so the herd's minute of them pages nobody; 15 minutes does.
        self._alarm(
            "SchedulerThrottles",
            "Scheduler throttled firings for 15 minutes: raise its invocation quota (docs/decisions/the-herd.md)",
            metric("InvocationThrottleCount"),
            threshold=1,
            evaluation_periods=3,
        )
        # The invocation quota is the account's, and AWS's pages do not say whether Scheduler reports its
        # throttles per group as well: the account-wide figure too (every stage of the Region counts in it).
        self._alarm(
            "SchedulerThrottlesAccountWide",
            "Scheduler throttled firings of the account for 15 minutes (every stage's and other users' count): "
            "raise its invocation quota (docs/decisions/the-herd.md)",
            metric("InvocationThrottleCount", account_wide=True),
            threshold=1,
            evaluation_periods=3,
        )
        self._alarm(
            "SchedulerDropped",
            "Scheduler dropped firings after its retries: those jobs never ran",
            metric("InvocationDroppedCount"),
            threshold=1,
        )
        self._alarm(
            "SchedulerDeadLetters",
            "Scheduler could not deliver firings and put them in the DLQ (a platform dead letter)",
            metric("InvocationsSentToDeadLetterCount"),
            threshold=settings.ALARM_PLATFORM_DEAD_LETTERS_PER_5_MIN,
        )

    def _dax(self, cluster: str) -> None:
        def metric(name: str) -> cloudwatch.Metric:
            return _five_minute_sum("AWS/DAX", name, {"ClusterId": cluster})

        # Not ErrorRequestCount: it counts user errors, and every lost claim is a ConditionalCheckFailed one.
        self._alarm(
            "DaxFaults",
            "the DAX status cache failed requests itself for 10 minutes (the functions' job-item calls fail)",
            metric("FaultRequestCount"),
            threshold=settings.ALARM_DAX_FAULTS_PER_5_MIN,
            evaluation_periods=2,
        )
        self._alarm(
            "DaxThrottles",
            "the DAX status cache throttled requests for 10 minutes: its nodes are too small or too few",
            metric("ThrottledRequestCount"),
            threshold=1,
            evaluation_periods=2,
        )

    def _nat_gateways(self, nat_gateways: tuple[str, ...]) -> None:
        """The way out of HTTP jobs, Lambda targets and customer code: a NAT that fails makes their attempts
        fail as if the tenants' endpoints did, which pages no one else."""
        for number, nat_gateway in enumerate(nat_gateways, start=1):
            gateway = {"NatGatewayId": nat_gateway}
            self._alarm(
                f"NatGateway{number}PortAllocationErrors",
                f"NAT gateway {number} could not open connections (55,000 at once to one destination): "
                "HTTP jobs and Lambda targets fail",
                _five_minute_sum("AWS/NATGateway", "ErrorPortAllocation", gateway),
                threshold=settings.ALARM_NAT_PORT_ALLOCATION_ERRORS_PER_5_MIN,
            )
            self._alarm(
                f"NatGateway{number}DroppedPackets",
                f"NAT gateway {number} dropped packets for 15 minutes: check the AWS Health dashboard",
                _five_minute_sum("AWS/NATGateway", "PacketsDropCount", gateway),
                threshold=settings.ALARM_NAT_DROPPED_PACKETS_PER_5_MIN,
                evaluation_periods=3,
            )

    def _account_concurrency(self, quota: int) -> None:
        """Lambda's account-wide claim (reservations + unreserved in use) near the Region's quota: the
        worker, and every unreserved function of the account, is about to be throttled."""
        threshold = math.ceil(quota * settings.ALARM_ACCOUNT_CONCURRENCY_SHARE)
        self._alarm(
            "AccountConcurrency",
            f"the account's claimed Lambda concurrency reached {threshold} of its {quota} for 5 minutes: "
            "unreserved functions (the worker among them) throttle next; raise the quota or give stages "
            'smaller shares (docs/deploy.md "Quotas")',
            cloudwatch.Metric(
                namespace="AWS/Lambda", metric_name="ClaimedAccountConcurrency", period=ONE_MINUTE, statistic="Maximum"
            ),
            threshold=threshold,
            evaluation_periods=5,
        )

    def _worker_metric(self, name: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=settings.METRICS_NAMESPACE,
            metric_name=name,
            dimensions_map=WORKER_SERVICE,
            period=FIVE_MINUTES,
            statistic="Sum",
        )

    def _jobs_function(self, jobs_function: lambda_.IFunction) -> None:
        """A customer's jobs package is deployed (infra/jobs_function.py)."""
        self._alarm(
            "JobsFunctionErrors",
            "the jobs function failed as a whole (its process crashed, ran out of memory or time, or "
            "the customer's package failed to import): each such job's attempt failed",
            jobs_function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
            threshold=settings.ALARM_WORKER_ERRORS_PER_5_MIN,
        )
        self._alarm(
            "JobsFunctionThrottles",
            "invokes of the jobs function were throttled (account concurrency: each running customer "
            "job holds two executions, the worker's and the jobs function's): their attempts failed",
            jobs_function.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
            threshold=settings.ALARM_WORKER_THROTTLES_PER_5_MIN,
        )

    def _alarm(
        self, id: str, description: str, metric: cloudwatch.Metric, *, threshold: float, evaluation_periods: int = 1
    ) -> cloudwatch.Alarm:
        alarm = metric.create_alarm(
            self,
            id,
            alarm_name=self.names.alarm(id),
            alarm_description=description,
            threshold=threshold,
            evaluation_periods=evaluation_periods,
            comparison_operator=AT_LEAST,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        # OK too: on-call hears when it clears, and a new incident after it notifies again.
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        alarm.add_ok_action(actions.SnsAction(self.topic))
        self.alarms.append(alarm)
        return alarm


def _five_minute_sum(namespace: str, name: str, dimensions: dict[str, str] | None) -> cloudwatch.Metric:
    """An AWS service's metric, summed over 5 minutes (None: its account-wide form, without dimensions)."""
    return cloudwatch.Metric(
        namespace=namespace, metric_name=name, dimensions_map=dimensions, period=FIVE_MINUTES, statistic="Sum"
    )
