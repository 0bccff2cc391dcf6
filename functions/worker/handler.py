"""Worker Lambda: SQS batch -> Powertools partial-batch processing -> the worker (shared/worker/receive.py).

The handler reads the event and hands the records over, to be handled at once (producer.handle_all);
the completer (shared/worker/complete/completer.py) makes every queue call for them. Its second event source is
the backstop (shared/worker/complete/backstop.py): those batches' messages are recorded dead and buried in the DLQ.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

# boto3 first, before Powertools: measured, the same imports then cost ~30 ms less in a fresh
# interpreter (docs/benchmark.md "The API's cost").
import boto3  # noqa: F401

# isort: split
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.aws import queue, tracing
from shared.aws.metrics import handed_back, job_outcome, metrics
from shared.jobs import job_types
from shared.model.outcome import Outcome
from shared.worker.complete import backstop
from shared.worker.delivery import Delivery
from shared.worker.producer import Handled, Worker, handle_all
from shared.worker.verdicts import HandBack

logger = Logger(service="corral-worker")
# The built-in job types (and on the local profile the test tooling's) load at import: in the init
# phase, not on the first batch's clock. A customer's package never loads here: its types run in the
# jobs function (shared/worker/run/fence.py).
job_types.load()
# This process's view of the store and its thread pools, kept from batch to batch.
worker = Worker()
if "AWS_LAMBDA_FUNCTION_NAME" in os.environ:  # running as the function (not imported by a test or tool)
    worker.prepare()  # clients and the id secret, also in the init phase
# A batch whose every record is handed back (a lone retried job, every batch of a store blip) is a
# partial-batch answer like any other, not a Lambda error: an error would page the WorkerErrors
# alarm and make Lambda back off the event source's concurrency just when it should drain.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


class _HandedBack(Exception):
    """Tells Powertools a record failed (a batch item failure): the completer has handed it back."""


def _seconds_left(context: LambdaContext) -> float:
    return context.get_remaining_time_in_millis() / 1000


def _delivery(record: SQSRecord, seconds_left: float, queue_url: str | None) -> Delivery:
    return Delivery(
        message_id=record.message_id,
        body=record.body or "",
        receive_count=int(record.attributes.approximate_receive_count or 1),
        sent_at=int(record.attributes.sent_timestamp or 0) / 1000,
        seconds_left=seconds_left,
        receipt_handle=record.receipt_handle,
        attributes={
            name: attribute.string_value
            for name, attribute in record.message_attributes.items()
            if attribute.string_value is not None
        },
        queue_url=queue_url,
    )


def _handed_back(message_id: str, hand_back: HandBack) -> None:
    handed_back(hand_back.reason)
    # One line per hand-back: rare but telling (a store blip, a retry's backoff); the benchmark
    # counts them by reason to explain slow jobs.
    logger.info(
        "handed back", extra={"message_id": message_id, "seconds": hand_back.delay_seconds, "reason": hand_back.reason}
    )


def _record_failed(delivery: Delivery, error: Exception) -> None:
    logger.exception("record failed", exc_info=error, extra={"message_id": delivery.message_id})


def _record_handler(handled: dict[str, Handled]) -> Callable[[SQSRecord], Outcome]:
    """Powertools' record handler for a batch handled already: each record's answer."""

    def record_handler(record: SQSRecord) -> Outcome:
        settled = handled[record.message_id].settled
        if isinstance(settled, HandBack):
            _handed_back(record.message_id, settled)
            raise _HandedBack(settled.reason)
        job_outcome(settled)
        logger.debug("message handled", extra={"message_id": record.message_id, "outcome": settled})
        return settled

    return record_handler


@tracing.capture_handler("corral-worker")
@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    started_at = time.time()
    records = event.get("Records", [])
    from_backstop = bool(records) and backstop.drains(records[0].get("eventSourceARN"))
    # The queue the batch came from (a priority lane's, or the backstop): its hand-backs go back there.
    queue_url = queue.received_from(records[0].get("eventSourceARN")) if records else None
    deliveries = [_delivery(SQSRecord(record), _seconds_left(context), queue_url) for record in records]
    batch = worker.backstop_batch() if from_backstop else worker.batch(deliveries)
    handled: dict[str, Handled] = {}
    try:
        batch.begin(_seconds_left(context))  # while the batch's claims are under way
        handled = handle_all(deliveries, batch, _record_failed, backstop.handle if from_backstop else None)
        response = process_partial_response(
            event={**event, "Records": records},
            record_handler=_record_handler(handled),
            processor=processor,
            context=context,
        )
    finally:
        late = batch.finish()
    for each in late:  # a job whose outcome write failed after its record was answered: its message comes back
        if each.error is not None:
            logger.exception(
                "outcome write failed", exc_info=each.error, extra={"message_id": each.delivery.message_id}
            )
        _handed_back(each.delivery.message_id, each.hand_back)
        response["batchItemFailures"].append({"itemIdentifier": each.delivery.message_id})
    # started_at/busy_ms/environment (one log stream per execution environment on AWS)
    # are what the benchmark's worker utilisation is computed from.
    logger.info(
        "batch",
        extra={
            "size": len(records),
            "failures": len(response["batchItemFailures"]),
            "started_at": started_at,
            "busy_ms": round((time.time() - started_at) * 1000, 2),
            "record_ms": [each.milliseconds for each in handled.values()],
            # Each record's trace, as its sender (the API) logged it: one job's lines share it.
            "trace_ids": [tracing.record_trace_id(record) for record in records],
            "environment": context.log_stream_name,
            "backstop": from_backstop,
        },
    )
    return response
