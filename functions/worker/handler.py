"""Worker Lambda: SQS batch -> Powertools partial-batch processing -> domain `work`."""

from __future__ import annotations

import json
import time
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared import deadline, job_types, queue, settings
from shared.firings import job_message
from shared.metrics import job_outcome, job_retried, job_started, metrics
from shared.work import Delivery, RetryLater, work

logger = Logger(service="corral-worker")
# Job types (and the customer's package) load at import: in the init phase, not on the first batch's clock.
job_types.load()
processor = BatchProcessor(event_type=EventType.SQS)


# A record is not started with less than this left of the invocation: handed back for a short
# retry instead, so a slow batch ends before its timeout (which would hold every record of it
# for the whole visibility timeout).
MIN_SECONDS_LEFT_TO_START = 2.0
_invocation: LambdaContext | None = None


def _time_left_seconds() -> float:
    return _invocation.get_remaining_time_in_millis() / 1000 if _invocation else float("inf")


def record_handler(record: SQSRecord) -> str:
    try:
        message = job_message(json.loads(record.body), sent_at=int(record.attributes.sent_timestamp) / 1000)
    except (ValueError, TypeError, AttributeError) as error:
        queue.bury(record.body, f"unreadable job message: {error}")
        job_outcome("unreadable")
        return "unreadable"
    try:
        needed = max(MIN_SECONDS_LEFT_TO_START, deadline.timeout_of(message) + settings.JOB_START_RESERVE_SECONDS)
        if _time_left_seconds() < needed:
            raise RetryLater(1, "too little of the invocation left to start this job within its timeout")
        if record.attributes.approximate_receive_count == "1":
            job_started(message.enqueued_at)
        outcome = work(message, Delivery(message_id=record.message_id, body=record.body))
    except RetryLater as later:
        queue.retry_later(record.receipt_handle, later.seconds)
        job_retried()
        raise
    job_outcome(outcome)
    logger.debug("job handled", extra={"job_id": message.id, "outcome": outcome})
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
