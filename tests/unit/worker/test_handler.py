"""The worker Lambda's handler in-process: hand-backs are partial-batch answers, never Lambda errors;
results the store cannot hold, and outcomes the store rejects, end the job at once with a reason."""

from __future__ import annotations

import dataclasses
import time

from botocore.exceptions import ClientError

from shared import environment, settings
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.jobs import job_store
from tests.unit.worker_harness import dead_letters, deliver, poll, record, send


def test_a_batch_whose_every_record_is_handed_back_answers_batch_item_failures_and_does_not_raise(aws, monkeypatch):
    # An exclusive type: a first delivery of any other runs while the store is down (test_store_blips.py).
    echo = job_types.lookup("echo")
    monkeypatch.setitem(job_types._REGISTRY, "echo", dataclasses.replace(echo, exclusive=True))
    messages = [build_message("acme", JobRequest(JobSpec("echo", payload=n)), time.time()) for n in range(3)]
    for message in messages:
        send(aws, message.to_json())
    environment.change(table="no-such-table")  # the store is down (the id secret is cached)

    batch = poll(aws)

    assert sorted(batch.failed) == sorted(batch.message_ids) and len(batch.failed) == 3
    assert poll(aws) is None  # handed back with a delay, not left visible to spin


def _register(monkeypatch, name, run):
    monkeypatch.setitem(job_types._REGISTRY, name, job_types.JobType(name=name, run=run))


def test_a_result_over_the_cap_fails_the_job_at_once_and_says_why(aws, monkeypatch):
    runs = []
    _register(monkeypatch, "huge", lambda payload, context: runs.append(1) or "x" * settings.MAX_RESULT_BYTES)
    message = build_message("acme", JobRequest(JobSpec("huge", max_attempts=5)), time.time())

    batch = deliver(aws, message.to_json())

    assert batch.failed == []
    job = record(message.id)
    assert (job.status, job.attempts, len(runs)) == (Status.DEAD, 1, 1)
    assert f"over the limit of {settings.MAX_RESULT_BYTES} bytes" in job.error
    ((_, why),) = dead_letters(aws)
    assert "over the limit" in why


def test_a_result_just_within_the_cap_is_stored(aws, monkeypatch):
    _register(monkeypatch, "big", lambda payload, context: "x" * (settings.MAX_RESULT_BYTES - 2))  # + 2 quotes
    message = build_message("acme", JobRequest(JobSpec("big")), time.time())

    deliver(aws, message.to_json())

    assert record(message.id).status is Status.SUCCEEDED


def test_an_outcome_the_store_rejects_as_invalid_ends_the_job_instead_of_waiting_for_a_blip_to_pass(aws, monkeypatch):
    def rejected(*args, **kwargs):
        raise ClientError({"Error": {"Code": "ValidationException", "Message": "Item size too large"}}, "UpdateItem")

    monkeypatch.setattr(job_store, "complete", rejected)
    message = build_message("acme", JobRequest(JobSpec("echo", payload=1)), time.time())

    batch = deliver(aws, message.to_json())

    assert batch.failed == []
    job = record(message.id)
    assert job.status is Status.DEAD
    assert "the store refused the job's outcome (ValidationException)" in job.error
    assert len(dead_letters(aws)) == 1


def test_an_unexpected_error_hands_the_message_back_soon_not_after_the_batchs_whole_visibility(aws, monkeypatch):
    # A fault of ours or of a dependency (not a job's failure): the message returns in seconds, and
    # the job runs then; left to the batch's visibility (its jobs' timeouts) it would wait minutes.
    from shared.worker import receive as worker_receive

    handle, failures = worker_receive.handle, []

    def fails_once(delivery, batch):
        if not failures:
            failures.append(delivery.message_id)
            raise RuntimeError("dictionary changed size during iteration")
        return handle(delivery, batch)

    monkeypatch.setattr(worker_receive, "handle", fails_once)
    message = build_message("acme", JobRequest(JobSpec("echo", payload="again")), time.time())
    send(aws, message.to_json())

    assert poll(aws).failed == failures
    deadline = time.monotonic() + 10
    while (batch := poll(aws)) is None and time.monotonic() < deadline:
        time.sleep(0.2)

    assert batch is not None and batch.failed == []
    assert record(message.id).status is Status.SUCCEEDED


def test_an_outcome_write_failing_unexpectedly_hands_its_message_back_soon(aws, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the write")

    monkeypatch.setattr(job_store, "complete", broken)
    message = build_message("acme", JobRequest(JobSpec("echo")), time.time())
    send(aws, message.to_json())

    first = poll(aws)
    assert first.failed == first.message_ids
    deadline = time.monotonic() + 6
    while (again := poll(aws)) is None and time.monotonic() < deadline:
        time.sleep(0.2)

    assert again is not None  # back within seconds (its claim's lease then decides when it runs again)
