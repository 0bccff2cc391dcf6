"""A batch's messages and claims are held about one job's timeout at a time (shared/worker/deadline.py
`HiddenBatch`, shared/worker/claim_ahead.py `lease_for_its_turn`): renewed as each job's turn comes, so a worker
that dies costs its batch about one job's timeout plus the margin, not the batch's timeouts added up."""

from __future__ import annotations

import time
from typing import Any

import pytest

from shared.aws import queue
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message
from shared.model import JobMessage, JobSpec, Status
from shared.store import job_store
from shared.worker import deadline
from shared.worker.claim_ahead import ClaimsAhead
from tests.unit.worker_harness import poll, record, send

# Scaled down from AWS's 30 s jobs and 10 s margin: 2 s jobs, a 2 s margin, each job taking 1.2 s.
# A message is covered for 4 s from its turn; five jobs take 6 s, so the last two run past the first cover.
TIMEOUT, MARGIN, NAP, JOBS = 2, 2, 1.2, 5


class _WorkerDied(BaseException):
    """The execution environment ends in the middle of a job: nothing after it runs, nothing is answered."""


def _register(monkeypatch: pytest.MonkeyPatch, run: Any) -> None:
    monkeypatch.setitem(job_types._REGISTRY, "nap", job_types.JobType(name="nap", run=run, timeout_seconds=TIMEOUT))


def _send_jobs(aws: dict[str, Any], count: int = JOBS) -> list[JobMessage]:
    messages = [build_message("acme", JobRequest(JobSpec("nap", payload=n)), time.time()) for n in range(count)]
    for message in messages:
        send(aws, message.to_json())
    return messages


@pytest.fixture
def short_margin(aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(deadline, "MARGIN_SECONDS", MARGIN)
    return aws


def test_a_batch_of_long_jobs_stays_hidden_and_claimed_through_its_last_job(short_margin, monkeypatch):
    aws = short_margin
    seen_in_last_job: dict[str, Any] = {}
    messages: list[JobMessage] = []
    began = time.monotonic()

    def nap(payload: int, context: job_types.JobContext) -> int:
        time.sleep(NAP)
        if payload == JOBS - 1:  # the last job, 4.8 s into the batch: past every message's first cover
            seen_in_last_job["since_begin"] = time.monotonic() - began
            seen_in_last_job["visible"] = (
                aws["sqs"]
                .receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, VisibilityTimeout=0)
                .get("Messages", [])
            )
            seen_in_last_job["claim"] = job_store.claim(messages[-1], "another-delivery", time.time(), 10)
        return payload

    _register(monkeypatch, nap)
    messages += _send_jobs(aws)

    batch = poll(aws)

    assert batch is not None and len(batch.message_ids) == JOBS and batch.failed == []
    assert seen_in_last_job["since_begin"] > TIMEOUT + MARGIN  # the first cover had run out by then
    assert seen_in_last_job["visible"] == []  # renewed at each turn: nothing of the batch came back
    assert isinstance(seen_in_last_job["claim"], job_store.HeldElsewhere)  # its claim's lease was extended too
    assert [record(m.id).status for m in messages] == [Status.SUCCEEDED] * JOBS
    assert [record(m.id).attempts for m in messages] == [1] * JOBS


def test_a_batch_whose_worker_dies_comes_back_about_one_jobs_timeout_later(short_margin, monkeypatch):
    aws = short_margin
    ran: list[int] = []

    def nap(payload: int, context: job_types.JobContext) -> int:
        ran.append(payload)
        time.sleep(NAP)
        if payload == 1 and ran.count(1) == 1:
            raise _WorkerDied
        return payload

    _register(monkeypatch, nap)
    # A dead environment gives nothing back: its claims made ahead stay until their leases end.
    monkeypatch.setattr(ClaimsAhead, "give_back_unused", lambda self: None)
    messages = _send_jobs(aws)
    began = time.monotonic()
    with pytest.raises(_WorkerDied):
        poll(aws)

    back_after: dict[str, float] = {}  # message id -> seconds after the dead batch began that it came back
    deadline_at = began + 20
    while any(record(m.id).status is not Status.SUCCEEDED for m in messages) and time.monotonic() < deadline_at:
        polled_at = time.monotonic() - began
        batch = poll(aws)
        if batch is None:
            time.sleep(0.1)
            continue
        for message_id in batch.message_ids:
            back_after.setdefault(message_id, polled_at)

    assert [record(m.id).status for m in messages] == [Status.SUCCEEDED] * JOBS
    assert len(back_after) == JOBS
    # Every message came back once the job running at the death could no longer be running: its turn
    # (1.2 s) + its timeout + the margin, ~5.2 s. Added-up timeouts would have hidden the k-th job for
    # k x 2 s + the margin: the last for 12 s.
    assert min(back_after.values()) >= TIMEOUT + MARGIN
    assert max(back_after.values()) < NAP + TIMEOUT + MARGIN + 1.5
    assert sorted(ran) == [0, 1, 1, 2, 3, 4]  # only the job cut short ran again


def test_a_batch_of_quick_jobs_sets_its_visibility_once(aws, monkeypatch):
    calls: list[int] = []
    real = queue.set_visibility

    def counted(entries):
        calls.append(len(entries))
        return real(entries)

    monkeypatch.setattr(queue, "set_visibility", counted)
    messages = [build_message("acme", JobRequest(JobSpec("echo", payload=n)), time.time()) for n in range(10)]
    for message in messages:
        send(aws, message.to_json())

    batch = poll(aws)

    assert batch is not None and len(batch.message_ids) == 10
    assert calls == [10]
    assert [record(m.id).status for m in messages] == [Status.SUCCEEDED] * 10


def test_a_job_whose_claim_was_taken_over_before_its_turn_is_not_run(short_margin, monkeypatch):
    aws = short_margin
    ran: list[int] = []
    messages: list[JobMessage] = []

    def nap(payload: int, context: job_types.JobContext) -> int:
        ran.append(payload)
        if payload == 0:
            # Another delivery of the second job claims it once its lease made ahead has run out
            # (a `now` past it stands for the wait), while this batch is still busy.
            taken = job_store.claim(messages[1], "another-delivery", time.time() + TIMEOUT + MARGIN + 1, 10)
            assert isinstance(taken, job_store.Claimed)
            time.sleep(NAP)
        return payload

    _register(monkeypatch, nap)
    messages += _send_jobs(aws, 2)

    batch = poll(aws)

    assert batch is not None and batch.failed == []
    assert 1 not in ran  # its claim could not be extended at its turn: the holder runs it, not this batch
    assert record(messages[1].id).status is Status.RUNNING
