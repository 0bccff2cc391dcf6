"""The operators' CloudWatch dashboard (`corral-operations`, a stage's `corral-<stage>-operations-<region>`):
the figures the benchmark reports, from CloudWatch itself, so it still answers when the API (and its
/operator view) does not.

Rows: the API (requests, 5xx, p99 latency), enqueue-to-run p99, the queue (waiting, in flight, oldest),
the workers (concurrency, errors, throttles, hand-backs), dead letters by reason and by tenant, the
table, and on AWS the DAX cache. Metric names as in infra/alarms.py and shared/aws/metrics.py.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from infra.alarms import FIVE_MINUTES, ONE_MINUTE, WORKER_SERVICE, Watched
from shared import settings
from shared.settings import ResourceNames

WIDGET_WIDTH = 8  # three widgets to a row of 24
WIDGET_HEIGHT = 6


def _corral(name: str, statistic: str = "Sum", **dimensions: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=settings.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map=dimensions or WORKER_SERVICE,
        period=ONE_MINUTE,
        statistic=statistic,
    )


def _graph(
    title: str, *metrics: cloudwatch.IMetric, right: tuple[cloudwatch.IMetric, ...] = ()
) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(
        title=title, left=list(metrics), right=list(right), width=WIDGET_WIDTH, height=WIDGET_HEIGHT
    )


class OperationsDashboard(Construct):
    def __init__(self, scope: Construct, id: str, *, names: ResourceNames, watched: Watched) -> None:
        super().__init__(scope, id)
        api, queue, worker, table = watched.http_api, watched.queue, watched.worker, watched.store.table
        per_minute = {"period": ONE_MINUTE}
        rows: list[list[cloudwatch.IWidget]] = [
            [
                _graph(
                    "API requests and 5xx",
                    api.metric_count(**per_minute),
                    right=(api.metric_server_error(**per_minute),),
                ),
                _graph("API latency p99 (ms)", api.metric_latency(statistic="p99", **per_minute)),
                _graph(
                    "Enqueue-to-start p99 (ms, first deliveries)",
                    _corral("EnqueueToStartLatency", statistic="p99"),
                ),
            ],
            [
                _graph(
                    "Queue: waiting and in flight",
                    queue.queue.metric_approximate_number_of_messages_visible(statistic="Maximum", **per_minute),
                    queue.queue.metric_approximate_number_of_messages_not_visible(statistic="Maximum", **per_minute),
                ),
                _graph(
                    "Oldest message (s)",
                    *(
                        lane.metric_approximate_age_of_oldest_message(statistic="Maximum", **per_minute)
                        for lane in queue.lanes.values()
                    ),
                    queue.dlq.metric_approximate_age_of_oldest_message(statistic="Maximum", **per_minute),
                ),
                _graph(
                    "Workers: concurrency, errors, throttles",
                    worker.metric("ConcurrentExecutions", statistic="Maximum", **per_minute),
                    right=(worker.metric_errors(**per_minute), worker.metric_throttles(**per_minute)),
                ),
            ],
            [
                _graph(
                    "Jobs: succeeded and enqueued",
                    _corral("JobsSucceeded"),
                    _corral("JobsEnqueued", service="corral-api"),
                ),
                _graph("Hand-backs: all, and the store's", _corral("JobsRetried"), _corral("StoreHandBacks")),
                _graph(
                    "Dead by reason",
                    _corral("JobsDead"),
                    _corral("UnreadableMessages"),
                    cloudwatch.Metric(
                        namespace="AWS/Scheduler",
                        metric_name="InvocationsSentToDeadLetterCount",
                        dimensions_map={"ScheduleGroup": watched.schedule_group},
                        period=ONE_MINUTE,
                        statistic="Sum",
                    ),
                ),
            ],
            [
                _graph(
                    "Dead letters by tenant",
                    cloudwatch.MathExpression(
                        expression=(
                            f"SEARCH('{{{settings.METRICS_NAMESPACE},tenant}} MetricName=\"DeadLettersByTenant\"', "
                            "'Sum', 300)"
                        ),
                        label="",
                        period=FIVE_MINUTES,
                    ),
                ),
                _graph(
                    "Table: throttles and system errors",
                    *(
                        cloudwatch.Metric(
                            namespace="AWS/DynamoDB",
                            metric_name=f"{direction}ThrottleEvents",
                            dimensions_map={"TableName": table.table_name},
                            period=ONE_MINUTE,
                            statistic="Sum",
                        )
                        for direction in ("Read", "Write")
                    ),
                    right=(table.metric_user_errors(**per_minute),),
                ),
                _graph(
                    "Table: consumed capacity",
                    table.metric_consumed_write_capacity_units(**per_minute),
                    table.metric_consumed_read_capacity_units(**per_minute),
                ),
            ],
        ]
        if watched.dax_cluster:
            rows.append([self._dax(watched.dax_cluster)])
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            # Dashboards are global to the account: a stage's name carries its Region.
            dashboard_name=names.account_wide(names.dashboard, Stack.of(self).region),
            default_interval=Duration.hours(3),
            widgets=rows,
        )

    @staticmethod
    def _dax(cluster: str) -> cloudwatch.GraphWidget:
        def metric(name: str, statistic: str = "Sum") -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace="AWS/DAX",
                metric_name=name,
                dimensions_map={"ClusterId": cluster},
                period=ONE_MINUTE,
                statistic=statistic,
            )

        return _graph(
            "Status cache (DAX): hits, misses, faults",
            metric("ItemCacheHits"),
            metric("ItemCacheMisses"),
            right=(metric("FaultRequestCount"), metric("ThrottledRequestCount")),
        )
