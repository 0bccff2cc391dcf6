"""The job queue: sending jobs, delaying retries, and the dead-letter queue."""

from __future__ import annotations

import random

from shared import settings
from shared.aws import client
from shared.model import JobMessage


def _queue_url() -> str:
    return settings.env("CORRAL_QUEUE_URL")


def send(message: JobMessage, delay_seconds: int = 0) -> None:
    client("sqs").send_message(QueueUrl=_queue_url(), MessageBody=message.to_json(), DelaySeconds=delay_seconds)


def backoff_seconds(attempt: int) -> int:
    """Exponential backoff with jitter for the retry after `attempt` (1-based)."""
    base = settings.RETRY_BACKOFF_BASE_SECONDS * 2 ** (attempt - 1)
    return int(min(settings.RETRY_BACKOFF_CAP_SECONDS, base * random.uniform(0.8, 1.2)))


def retry_later(receipt_handle: str, delay_seconds: float) -> None:
    """Make a received message visible again after `delay_seconds` (not the full visibility timeout)."""
    client("sqs").change_message_visibility(
        QueueUrl=_queue_url(), ReceiptHandle=receipt_handle, VisibilityTimeout=max(0, int(delay_seconds))
    )


def bury(body: str, reason: str) -> None:
    """Put a message in the DLQ with the reason it died. The caller then acks the original."""
    client("sqs").send_message(
        QueueUrl=settings.env("CORRAL_DLQ_URL"),
        MessageBody=body,
        MessageAttributes={"corral-reason": {"DataType": "String", "StringValue": reason[:1000]}},
    )
