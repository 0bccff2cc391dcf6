"""Queue health, for operators: depth, in flight, delayed, oldest age, for the jobs queue and its DLQ.

Counts are SQS's approximate attributes (one GetQueueAttributes per queue). SQS has no attribute for
the oldest message's age: it is CloudWatch's `ApproximateAgeOfOldestMessage` (1-minute periods,
the latest datapoint of the last 10 minutes); None where CloudWatch has none (the embedded
emulator publishes no SQS metrics, nor does AWS for a queue idle for hours).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import settings
from shared.aws import client

_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


@dataclass(frozen=True)
class QueueHealth:
    name: str
    depth: int  # visible: waiting for a worker
    in_flight: int  # received, not yet deleted (running, or waiting for a retry's visibility)
    delayed: int  # not yet due (delay_seconds, run_at within 15 minutes)
    oldest_age_seconds: float | None

    def public(self) -> dict[str, Any]:
        return asdict(self)


def _oldest_age(name: str) -> float | None:
    now = datetime.now(UTC)
    try:
        answer = client("cloudwatch").get_metric_statistics(
            Namespace="AWS/SQS",
            MetricName="ApproximateAgeOfOldestMessage",
            Dimensions=[{"Name": "QueueName", "Value": name}],
            StartTime=now - timedelta(minutes=10),
            EndTime=now,
            Period=60,
            Statistics=["Maximum"],
        )
    except (BotoCoreError, ClientError):
        return None
    points = sorted(answer.get("Datapoints", []), key=lambda point: point["Timestamp"])
    return float(points[-1]["Maximum"]) if points else None


def health(name: str, url: str) -> QueueHealth:
    values = client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=list(_ATTRIBUTES))["Attributes"]
    depth, in_flight, delayed = (int(values.get(attribute, 0)) for attribute in _ATTRIBUTES)
    return QueueHealth(name, depth, in_flight, delayed, _oldest_age(name))


def both() -> list[QueueHealth]:
    """The jobs queue and the DLQ (the environment's CORRAL_QUEUE_URL and CORRAL_DLQ_URL)."""
    return [
        health(settings.QUEUE_NAME, settings.env("CORRAL_QUEUE_URL")),
        health(settings.DLQ_NAME, settings.env("CORRAL_DLQ_URL")),
    ]
