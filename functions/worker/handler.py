"""Worker Lambda: SQS batch -> Powertools partial-batch processing -> domain `work`."""

from __future__ import annotations

import time
from typing import Any

# boto3 first, before Powertools: measured, the same imports then cost ~30 ms less in a fresh
# interpreter (docs/benchmark.md "The API's cost").
import boto3  # noqa: F401

# isort: split
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared import deadline, job_types, queue
from shared.metrics import job_outcome, job_retried, metrics
from shared.model import Outcome
from shared.work import Delivery, RetryLater, receive

logger = Logger(service="corral-worker")
# Job types (and the customer's package) load at import: in the init phase, not on the first batch's clock.
job_types.load()
# A batch whose every record is handed back (a lone retried job, every batch of a store blip) is a
# partial-batch answer like any other, not a Lambda error: an error would page the WorkerErrors
# alarm and make Lambda back off the event source's concurrency just when it should drain.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


_invocation: LambdaContext | None = None


def _time_left_seconds() -> float:
    return _invocation.get_remaining_time_in_millis() / 1000 if _invocation else float("inf")


def _delivery(record: SQSRecord) -> Delivery:
    return Delivery(
        message_id=record.message_id,
        body=record.body or "",
        receive_count=int(record.attributes.approximate_receive_count or 1),
        sent_at=int(record.attributes.sent_timestamp or 0) / 1000,
        seconds_left=_time_left_seconds(),
    )


def record_handler(record: SQSRecord) -> Outcome:
    delivery = _delivery(record)
    try:
        outcome = receive(delivery)
    except RetryLater as later:
        queue.retry_later(record.receipt_handle, later.seconds)
        job_retried()
        raise
    job_outcome(outcome)
    logger.debug("message handled", extra={"message_id": record.message_id, "outcome": outcome})
    return outcome


def _hide_for_their_timeouts(records: list[dict[str, Any]]) -> None:
    """Hide each message about as long as this invocation may take to reach and run it (shared/deadline.py)."""
    deadline.hide_batch(
        [record["receiptHandle"] for record in records], [record["body"] for record in records], _time_left_seconds()
    )


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    global _invocation
    _invocation = context
    started_at = time.time()
    _hide_for_their_timeouts(event.get("Records", []))
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    # started_at/busy_ms/environment (one log stream per execution environment on AWS)
    # are what the benchmark's worker utilisation is computed from.
    logger.info(
        "batch",
        extra={
            "size": len(event.get("Records", [])),
            "failures": len(response["batchItemFailures"]),
            "started_at": started_at,
            "busy_ms": round((time.time() - started_at) * 1000, 2),
            "environment": context.log_stream_name,
        },
    )
    return response
