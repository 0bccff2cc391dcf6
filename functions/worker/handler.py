"""Worker Lambda: SQS batch -> Powertools partial-batch processing -> domain `work`."""

from __future__ import annotations

import os
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

from shared.aws import queue
from shared.aws.metrics import job_outcome, job_retried, metrics
from shared.jobs import job_types
from shared.model import Outcome
from shared.worker import deadline, work
from shared.worker.work import Delivery, RetryLater, receive

logger = Logger(service="corral-worker")
# Job types (and the customer's package) load at import: in the init phase, not on the first batch's clock.
job_types.load()
if "AWS_LAMBDA_FUNCTION_NAME" in os.environ:  # running as the function (not imported by a test or tool)
    work.prepare()  # clients and the id secret, also in the init phase
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


_record_ms: list[float] = []  # this batch's per-record handling times, for its log line
# The batch's messages, hidden as long as this invocation may still need each (shared/worker/deadline.py).
_hidden = deadline.HiddenBatch([])


def record_handler(record: SQSRecord) -> Outcome:
    delivery = _delivery(record)
    _hidden.turn(record.message_id, delivery.seconds_left)
    began = time.perf_counter()
    try:
        outcome = receive(delivery)
    except RetryLater as later:
        _hand_back(record.message_id, record.receipt_handle, later)
        raise
    except Exception as error:
        _hand_back_unexpected(record, error, "record failed")
        raise
    finally:
        _record_ms.append(round((time.perf_counter() - began) * 1000, 1))
    job_outcome(outcome)
    logger.debug("message handled", extra={"message_id": record.message_id, "outcome": outcome})
    return outcome


def _hand_back(message_id: str, receipt_handle: str, later: RetryLater) -> None:
    _hidden.handed_back(message_id)
    queue.retry_later(receipt_handle, later.seconds)
    job_retried()
    # One line per hand-back: rare but telling (a store blip, a retry's backoff); the benchmark
    # counts them by reason to explain slow jobs.
    logger.info("handed back", extra={"message_id": message_id, "seconds": later.seconds, "reason": later.reason})


def _hand_back_unexpected(record: SQSRecord, error: BaseException, what: str) -> None:
    """Not a job's failure (work() records those): a fault of ours or of a dependency. The message
    comes back soon, later each time, and reaches the DLQ after the queue's receive budget, instead
    of staying hidden for the whole batch's visibility (job timeouts, up to minutes)."""
    logger.exception(what, exc_info=error, extra={"message_id": record.message_id})
    _hand_back(record.message_id, record.receipt_handle, _delivery(record).hand_back(f"{what}: {error!r}"))


def _report_failed_writes(
    records: list[dict[str, Any]], failed: list[tuple[str, BaseException]], response: dict[str, Any]
) -> None:
    """A job whose outcome write failed after its record was answered: its message comes back."""
    by_id = {record["messageId"]: SQSRecord(record) for record in records}
    for message_id, error in failed:
        if isinstance(error, RetryLater):
            _hand_back(message_id, by_id[message_id].receipt_handle, error)
        else:
            _hand_back_unexpected(by_id[message_id], error, "outcome write failed")
        response["batchItemFailures"].append({"itemIdentifier": message_id})


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    global _invocation, _hidden
    _invocation = context
    started_at = time.time()
    _record_ms.clear()
    # Jobs before outcome messages (a store blip's deferred records): a job waiting in the batch
    # behind them would wait for their writes.
    records = sorted(event.get("Records", []), key=queue.is_outcome_record)
    _hidden = deadline.HiddenBatch(
        [(record["messageId"], record["receiptHandle"], record["body"]) for record in records]
    )
    with work.batch([_delivery(SQSRecord(record)) for record in records]) as writes_failed:
        _hidden.begin(_time_left_seconds())  # while the batch's claims are under way
        response = process_partial_response(
            event={**event, "Records": records}, record_handler=record_handler, processor=processor, context=context
        )
    _report_failed_writes(records, writes_failed, response)
    # started_at/busy_ms/environment (one log stream per execution environment on AWS)
    # are what the benchmark's worker utilisation is computed from.
    logger.info(
        "batch",
        extra={
            "size": len(records),
            "failures": len(response["batchItemFailures"]),
            "started_at": started_at,
            "busy_ms": round((time.time() - started_at) * 1000, 2),
            "record_ms": _record_ms,
            "environment": context.log_stream_name,
        },
    )
    return response
