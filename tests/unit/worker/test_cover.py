"""A batch's jobs run at once (shared/worker/producer.py `handle_all`), and its messages and claims are held
for each job's own timeout (shared/worker/run/cover.py `HiddenBatch`, shared/worker/admit/claim_ahead.py): no job
waits out another's time, and a worker that dies costs its batch about one job's timeout plus the margin,
not the batch's timeouts added up."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from shared.aws import queue
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.worker.admit.claim_ahead import ClaimsAhead
from shared.worker.run import cover
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
    monkeypatch.setattr(cover, "MARGIN_SECONDS", MARGIN)
    return aws


def test_a_batchs_jobs_run_at_once_so_none_waits_out_another(short_margin, monkeypatch):
    aws = short_margin
    all_started = threading.Barrier(JOBS)

    def meet(payload: int, context: job_types.JobContext) -> int:
        all_started.wait(20)  # broken (the job fails) unless every job of the batch is running at once
        return payload

    monkeypatch.setitem(job_types._REGISTRY, "nap", job_types.JobType(name="nap", run=meet, timeout_seconds=30))
    messages = _send_jobs(aws)

    batch = poll(aws)

    assert batch is not None and len(batch.message_ids) == JOBS and batch.failed == []
    assert not all_started.broken
    assert [record(m.id).status for m in messages] == [Status.SUCCEEDED] * JOBS


def test_a_job_that_never_answers_does_not_hold_its_batch_mates(short_margin, monkeypatch):
    # One tenant's job hangs until its timeout; another tenant's jobs in the same batch start at once
    # and are recorded long before it ends (N1 of the security review: before, each waited its turn).
    aws = short_margin
    hung = threading.Event()
    stopped = threading.Event()
    stopped_at: list[float] = []

    def hang(payload: object, context: job_types.JobContext) -> None:
        try:
            hung.wait(TIMEOUT * 3)
        finally:
            stopped_at.append(time.time())
            stopped.set()

    monkeypatch.setitem(job_types._REGISTRY, "hang", job_types.JobType(name="hang", run=hang, timeout_seconds=TIMEOUT))
    stuck = build_message("noisy", JobRequest(JobSpec("hang")), time.time())
    send(aws, stuck.to_json())
    quick = [build_message("quiet", JobRequest(JobSpec("echo", payload=n)), time.time()) for n in range(4)]
    for message in quick:
        send(aws, message.to_json())

    batch = poll(aws)
    hung.set()
    assert stopped.wait(TIMEOUT * 3), "the hung job's code never returned"  # its thread outlives the time limit

    assert batch is not None and len(batch.message_ids) == 5
    assert [record(m.id).status for m in quick] == [Status.SUCCEEDED] * 4
    # recorded before the hung job's timeout ended it, not after
    assert max(record(m.id).finished_at for m in quick) < stopped_at[0]
    assert record(stuck.id).status is Status.FAILED and record(stuck.id).error == f"timed out after {TIMEOUT} s"


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
    # Every message came back once its job could no longer be running: its timeout + the margin, ~4 s.
    # Added-up timeouts would have hidden the k-th job for k x 2 s + the margin: the last for 12 s.
    # Added-up covers would have brought them back one by one, TIMEOUT apart; one cover brings them together.
    assert min(back_after.values()) >= TIMEOUT + MARGIN
    assert max(back_after.values()) - min(back_after.values()) < TIMEOUT
    assert sorted(ran) == [0, 1, 1, 2, 3, 4]  # only the job cut short ran again


def test_a_batch_of_quick_jobs_sets_its_visibility_once(aws, monkeypatch):
    calls: list[int] = []
    real = queue.set_visibility

    def counted(entries, **where):
        calls.append(len(entries))
        return real(entries, **where)

    monkeypatch.setattr(queue, "set_visibility", counted)
    messages = [build_message("acme", JobRequest(JobSpec("echo", payload=n)), time.time()) for n in range(10)]
    for message in messages:
        send(aws, message.to_json())

    batch = poll(aws)

    assert batch is not None and len(batch.message_ids) == 10
    assert calls == [10]
    assert [record(m.id).status for m in messages] == [Status.SUCCEEDED] * 10
