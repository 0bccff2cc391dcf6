"""What an operator watches: the queue, its DLQ and the worker function, read from AWS itself.

SQS's GetQueueAttributes gives the counts (visible, in flight, delayed) at once; the oldest
message's age and the worker's concurrency, errors and throttles exist only as CloudWatch
metrics (AWS/SQS ApproximateAgeOfOldestMessage, AWS/Lambda ConcurrentExecutions, Errors,
Throttles), published each minute. A metric with no datapoints in the window is None, not 0:
"no data" and "zero" are different answers for an operator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import environment, settings
from shared.aws.clients import client

_QUEUE_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
METRICS_WINDOW = timedelta(minutes=15)


def snapshot(now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    names = environment.current().names
    queue = _queue_counts(environment.current().queue_url)
    dlq = _queue_counts(environment.current().dlq_url)
    metrics, metrics_note = _metrics(now)
    return {
        "queue": {"name": names.queue, **queue, "oldest_age_seconds": metrics.get("oldest_age_seconds")},
        "dlq": {"name": names.dlq, **dlq, "oldest_age_seconds": metrics.get("dlq_oldest_age_seconds")},
        "workers": {
            "function": names.worker_function,
            "max_concurrency": settings.WORKER_MAX_CONCURRENCY,
            "concurrent_executions": metrics.get("concurrent_executions"),
            "errors": metrics.get("errors"),
            "throttles": metrics.get("throttles"),
            "invocations": metrics.get("invocations"),
        },
        "metrics_window_seconds": int(METRICS_WINDOW.total_seconds()),
        "metrics_note": metrics_note,
        "at": now.isoformat(timespec="seconds"),
    }


def _queue_counts(queue_url: str) -> dict[str, int]:
    attributes = client("sqs").get_queue_attributes(QueueUrl=queue_url, AttributeNames=list(_QUEUE_ATTRIBUTES))[
        "Attributes"
    ]
    return {
        "depth": int(attributes.get("ApproximateNumberOfMessages", 0)),
        "in_flight": int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        "delayed": int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
    }


# result key -> (namespace, metric, dimension name, dimension value, statistic); a query id is the key.
def _queries() -> dict[str, tuple[str, str, str, str, str]]:
    names = environment.current().names
    return {
        "oldest_age_seconds": ("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", names.queue, "Maximum"),
        "dlq_oldest_age_seconds": (
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            "QueueName",
            names.dlq,
            "Maximum",
        ),
        "concurrent_executions": (
            "AWS/Lambda",
            "ConcurrentExecutions",
            "FunctionName",
            names.worker_function,
            "Maximum",
        ),
        "errors": ("AWS/Lambda", "Errors", "FunctionName", names.worker_function, "Sum"),
        "throttles": ("AWS/Lambda", "Throttles", "FunctionName", names.worker_function, "Sum"),
        "invocations": ("AWS/Lambda", "Invocations", "FunctionName", names.worker_function, "Sum"),
    }


def _metrics(now: datetime) -> tuple[dict[str, float | None], str]:
    queries = _queries()
    request = [
        {
            "Id": key,
            "MetricStat": {
                "Metric": {"Namespace": namespace, "MetricName": metric, "Dimensions": [{"Name": dim, "Value": value}]},
                "Period": int(METRICS_WINDOW.total_seconds()),
                "Stat": stat,
            },
            "ReturnData": True,
        }
        for key, (namespace, metric, dim, value, stat) in queries.items()
    ]
    try:
        answer = client("cloudwatch").get_metric_data(
            MetricDataQueries=request, StartTime=now - METRICS_WINDOW, EndTime=now
        )
    except (ClientError, BotoCoreError):
        return {}, "CloudWatch metrics are unavailable right now; the queue counts above are live"
    values: dict[str, float | None] = {key: None for key in queries}
    for result in answer.get("MetricDataResults", []):
        points = result.get("Values") or []
        values[result["Id"]] = max(points) if points else None
    missing = [_LABELS[key] for key, value in values.items() if value is None]
    note = "from CloudWatch over the last 15 minutes"
    if missing:
        note += " (no datapoints yet for " + ", ".join(missing) + ": shown as —)"
    return values, note


_LABELS = {
    "oldest_age_seconds": "the queue's oldest message",
    "dlq_oldest_age_seconds": "the DLQ's oldest message",
    "concurrent_executions": "worker concurrency",
    "errors": "worker errors",
    "throttles": "worker throttles",
    "invocations": "worker invocations",
}


@dataclass(frozen=True)
class QueueHealth:
    """One queue's line of the snapshot (the operator CLI's `queue` command)."""

    name: str
    depth: int  # visible: waiting for a worker
    in_flight: int  # received, not yet deleted (running, or waiting for a retry's visibility)
    delayed: int  # not yet due (delay_seconds, run_at within 15 minutes)
    oldest_age_seconds: float | None

    def public(self) -> dict[str, Any]:
        return asdict(self)


def both() -> list[QueueHealth]:
    """The jobs queue and the DLQ, from one snapshot."""
    view = snapshot()
    fields = ("name", "depth", "in_flight", "delayed", "oldest_age_seconds")
    return [QueueHealth(**{name: view[queue][name] for name in fields}) for queue in ("queue", "dlq")]
