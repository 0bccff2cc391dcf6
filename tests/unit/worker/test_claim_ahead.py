"""A batch claims its jobs together as it begins (shared/worker/admit/claim_ahead.py): the k-th job waits for
one claim's round trip, not k. What must still hold: each job runs once, its record says when its
code really started, and a job that will not start in the invocation's time is not held by a claim."""

from __future__ import annotations

import threading
import time
from typing import Any

from botocore.exceptions import ClientError

from shared import settings
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.jobs import job_claims
from tests.unit.worker_harness import WorkerContext, poll, record, send


def _register(monkeypatch, name: str, run: Any) -> None:
    monkeypatch.setitem(job_types._REGISTRY, name, job_types.JobType(name=name, run=run))


def _send_jobs(aws: dict[str, Any], job_type: str, count: int) -> list[JobMessage]:
    messages = [build_message("acme", JobRequest(JobSpec(job_type, payload=n)), time.time()) for n in range(count)]
    for message in messages:
        send(aws, message.to_json())
    return messages


def test_every_job_of_a_batch_is_claimed_while_the_first_one_runs(aws, monkeypatch):
    seen: list[dict[str, Status | None]] = []
    messages: list[JobMessage] = []

    def peek(payload: Any, context: job_types.JobContext) -> int:
        time.sleep(0.3)  # the claims are made side by side as the batch begins: all answered by now
        seen.append({m.id: (found.status if (found := record(m.id)) else None) for m in messages})
        return payload

    _register(monkeypatch, "peek", peek)
    messages += _send_jobs(aws, "peek", 5)

    batch = poll(aws)

    assert batch is not None and len(batch.message_ids) == 5 and batch.failed == []
    assert set(seen[0].values()) == {Status.RUNNING}  # claimed at their turn, the other four would not be
    assert [record(m.id).status for m in messages] == [Status.SUCCEEDED] * 5
    assert [record(m.id).attempts for m in messages] == [1] * 5


def test_a_batchs_jobs_start_together_and_record_when_their_code_started(aws, monkeypatch):
    # Each job's code waits for the other two to be running: it succeeds only if none waited for another to end
    # (no wall-clock bound, which a loaded machine breaks).
    together = threading.Barrier(3, timeout=20)
    _register(monkeypatch, "meet", lambda payload, context: together.wait())
    messages = _send_jobs(aws, "meet", 3)

    poll(aws)

    records = [record(m.id) for m in messages]
    assert [r.status for r in records] == [Status.SUCCEEDED] * 3
    items = [
        aws["dynamodb"].get_item(TableName=settings.TABLE_NAME, Key={"pk": {"S": f"job#{m.id}"}})["Item"]
        for m in messages
    ]
    # the dashboard's enqueue-to-run reads first_started_at: the first attempt's real start too
    assert [float(item["first_started_at"]["N"]) for item in items] == [r.started_at for r in records]


def _invocation_with(monkeypatch, seconds: float) -> None:
    """The invocation has `seconds` left as the batch begins, less every moment after."""
    began = time.monotonic()
    monkeypatch.setattr(
        WorkerContext, "get_remaining_time_in_millis", lambda self: int((seconds - (time.monotonic() - began)) * 1000)
    )


def _receive_handed_back(aws: dict[str, Any]) -> list[dict[str, Any]]:
    """The handed-back message, received early (its hand-back delay is seconds)."""
    sqs, url = aws["sqs"], aws["queue_url"]
    sqs_messages: list[dict[str, Any]] = []
    for _ in range(40):  # bounded: the hand-back hides it for a few seconds
        sqs_messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        if sqs_messages:
            break
    return sqs_messages


def test_a_job_that_cannot_start_in_the_invocations_time_is_handed_back_unclaimed(aws, monkeypatch):
    needed = job_types.lookup("echo").timeout_seconds + settings.JOB_START_RESERVE_SECONDS
    _invocation_with(monkeypatch, needed - 1)
    messages = _send_jobs(aws, "echo", 3)

    batch = poll(aws)

    assert batch is not None and len(batch.failed) == 3
    assert [record(m.id) for m in messages] == [None] * 3  # no claim ahead holds them


def test_two_deliveries_of_one_job_in_a_batch_run_it_once(aws, monkeypatch):
    runs: list[int] = []
    _register(monkeypatch, "count", lambda payload, context: runs.append(payload) or payload)
    (message,) = _send_jobs(aws, "count", 1)
    send(aws, message.to_json())  # SQS delivered it twice (or an idempotency key enqueued it again)

    batch = poll(aws)

    assert batch is not None and len(batch.message_ids) == 2 and batch.failed == []
    assert runs == [0]
    assert record(message.id).status is Status.SUCCEEDED and record(message.id).attempts == 1


def test_a_store_blip_costs_a_batch_one_failed_claim_and_its_jobs_run_unclaimed(aws, monkeypatch):
    calls: list[str] = []

    def throttled(message: JobMessage, *args: Any, **kwargs: Any) -> None:
        calls.append(message.id)
        raise ClientError(
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "blip"}}, "UpdateItem"
        )

    runs: list[int] = []
    _register(monkeypatch, "count", lambda payload, context: runs.append(payload) or payload)
    monkeypatch.setattr(job_claims, "claim", throttled)
    _send_jobs(aws, "count", 5)

    batch = poll(aws)

    assert batch is not None and len(batch.message_ids) == 5 and batch.failed == []
    assert len(calls) == 1  # the batch's first claim found the store failing; the other four made no call
    assert sorted(runs) == [0, 1, 2, 3, 4]  # first deliveries run without a claim while the store fails
