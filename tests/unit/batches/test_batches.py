"""Batches on moto (shared/batches/batches.py, shared/store/batches/batch_items.py): the API, the worker's counts and
callbacks, redeliveries, crashes between a job's record and its batch's, retries and cancels; and a
hypothesis test over interleavings of all of them: a batch's counts always equal its members' states,
and each callback is enqueued once."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.aws import queue
from shared.batches import batches, follow_ups, members
from shared.control import cancel, retry
from shared.jobs.enqueue import JobRequest
from shared.model.message import BatchMember
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.batches import batch_items, batch_members
from shared.store.batches.batch_members import MemberState
from shared.store.jobs import job_store
from shared.tenants import tenants
from shared.worker import delivery
from tests.unit.api_harness import answer
from tests.unit.worker_harness import poll


def _api(
    method: str, path: str, body: Any = None, key: str = "", query: dict[str, str] | None = None
) -> tuple[int, Any]:
    return answer(method, path, key, body, query)


@pytest.fixture
def key(aws) -> str:
    return tenants.create_key("acme")


def _drain(aws: dict[str, Any], rounds: int = 20) -> None:
    """Poll until the queue has nothing visible (callbacks enqueued by a round run in the next)."""
    for _ in range(rounds):
        if poll(aws) is None:
            return


def _queued(aws: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    while got := aws["sqs"].receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10).get("Messages", []):
        found += [json.loads(m["Body"]) for m in got]
    return found


EVERY_CALLBACK = {
    "on_complete": {"type": "echo", "payload": {"said": "complete"}},
    "on_success": {"type": "echo", "payload": {"said": "success"}},
}


# --- the API ------------------------------------------------------------------------------------


def test_a_batch_is_created_running_and_its_jobs_carry_its_id(aws, key):
    status, created = _api("POST", "/v1/batches", {"jobs": [{"type": "echo", "payload": n} for n in range(3)]}, key)

    assert status == 201
    assert created["status"] == "running" and created["total"] == 3
    sent = _queued(aws)
    assert sorted(body["payload"] for body in sent) == [0, 1, 2]
    assert {body["batch"]["id"] for body in sent} == {created["id"]}
    status, shown = _api("GET", f"/v1/batches/{created['id']}", key=key)
    assert status == 200
    assert shown | {"created_at": 0} == {
        "id": created["id"],
        "status": "running",
        "total": 3,
        "pending": 3,
        "succeeded": 0,
        "dead": 0,
        "cancelled": 0,
        "skipped": 0,
        "created_at": 0,
        "finished_at": None,
        "callbacks": {},
    }


def test_an_invalid_job_refuses_the_whole_batch_naming_it_and_nothing_is_sent(aws, key):
    jobs = [{"type": "echo"}, {"type": "echo"}, {"type": "echo"}, {"type": "no-such-type"}]
    status, refused = _api("POST", "/v1/batches", {"jobs": jobs}, key)
    assert status == 422 and refused["fields"][0]["field"] == "jobs[3].type"

    status, refused = _api("POST", "/v1/batches", {"jobs": [{"type": "sleep", "payload": {"seconds": -1}}]}, key)
    assert status == 422 and refused["fields"][0]["field"] == "jobs[0].payload.seconds"

    status, refused = _api("POST", "/v1/batches", {"jobs": [{"type": "echo", "idempotency_key": "k"}]}, key)
    assert status == 422 and refused["fields"][0]["field"] == "jobs[0].idempotency_key"

    callback = {"type": "echo", "payload": "not an object"}
    status, refused = _api("POST", "/v1/batches", {"jobs": [{"type": "echo"}], "on_complete": callback}, key)
    assert status == 422 and refused["fields"][0]["field"] == "on_complete.payload"
    assert _queued(aws) == []


def test_the_same_idempotency_key_is_the_same_batch_and_sends_the_same_jobs(aws, key):
    body = {"jobs": [{"type": "echo", "payload": 1}], "idempotency_key": "nightly-2026-12-05"}
    first = _api("POST", "/v1/batches", body, key)[1]
    again = _api("POST", "/v1/batches", body, key)[1]

    assert first["id"] == again["id"]
    assert len({body["id"] for body in _queued(aws)}) == 1  # the same job, sent twice: the claim runs it once


def test_another_tenants_batch_is_not_found(aws, key):
    created = _api("POST", "/v1/batches", {"jobs": [{"type": "echo"}]}, key)[1]
    other = tenants.create_key("other")

    assert _api("GET", f"/v1/batches/{created['id']}", key=other)[0] == 404
    assert _api("POST", f"/v1/batches/{created['id']}/cancel", key=other)[0] == 404
    assert _api("GET", "/v1/batches/bnosuchbatch", key=key)[0] == 404


def test_batches_list_newest_first_filtered_by_status_page_by_page(aws, key):
    made = [_api("POST", "/v1/batches", {"jobs": [{"type": "echo"}]}, key)[1]["id"] for _ in range(3)]
    _api("POST", f"/v1/batches/{made[0]}/cancel", key=key)

    status, first = _api("GET", "/v1/batches", key=key, query={"limit": "2"})
    assert status == 200
    assert [b["id"] for b in first["batches"]] == [made[2], made[1]]
    _, second = _api("GET", "/v1/batches", key=key, query={"limit": "2", "cursor": first["next_cursor"]})
    assert [b["id"] for b in second["batches"]] == [made[0]] and second["next_cursor"] is None
    _, cancelled = _api("GET", "/v1/batches", key=key, query={"status": "cancelled"})
    assert [b["id"] for b in cancelled["batches"]] == [made[0]]
    assert _api("GET", "/v1/batches", key=key, query={"status": "sideways"})[0] == 422


# --- the worker -----------------------------------------------------------------------------------


def test_a_batch_that_all_succeeds_runs_on_complete_and_on_success_once_each(aws, key):
    created = _api(
        "POST", "/v1/batches", {"jobs": [{"type": "echo", "payload": n} for n in range(12)], **EVERY_CALLBACK}, key
    )[1]

    _drain(aws)

    shown = _api("GET", f"/v1/batches/{created['id']}", key=key)[1]
    assert (shown["status"], shown["succeeded"], shown["pending"]) == ("succeeded", 12, 0)
    complete = job_store.get(shown["callbacks"]["on_complete"])
    success = job_store.get(shown["callbacks"]["on_success"])
    assert complete.status is Status.SUCCEEDED and success.status is Status.SUCCEEDED
    assert complete.result["said"] == "complete"
    assert complete.result["batch"]["id"] == created["id"] and complete.result["batch"]["succeeded"] == 12
    assert complete.parent == {"kind": "batch", "id": created["id"], "callback": "on_complete"}
    member = job_store.get(batches.member_ids("acme", batch_items.get(created["id"]))[0])
    assert member.batch == created["id"] and member.public()["batch"] == created["id"]


def test_a_batch_with_a_dead_job_completes_with_failures_and_never_runs_on_success(aws, key):
    jobs = [{"type": "echo"}] * 4 + [{"type": "fail", "payload": {"times": 5}, "max_attempts": 1}]
    created = _api("POST", "/v1/batches", {"jobs": jobs, **EVERY_CALLBACK}, key)[1]

    _drain(aws)

    shown = _api("GET", f"/v1/batches/{created['id']}", key=key)[1]
    assert (shown["status"], shown["succeeded"], shown["dead"]) == ("completed_with_failures", 4, 1)
    assert shown["callbacks"]["on_success"] is None
    assert job_store.get(shown["callbacks"]["on_complete"]).status is Status.SUCCEEDED


def test_a_job_recorded_whose_batch_could_not_be_counted_is_counted_by_its_redelivery(aws, key, monkeypatch):
    created = _api("POST", "/v1/batches", {"jobs": [{"type": "echo"}] * 3, **EVERY_CALLBACK}, key)[1]
    failures = iter([True])
    real = follow_ups.job_ended

    def blip_once(job, status, **options):
        if next(failures, False):
            raise queue.client("sqs").exceptions.ClientError({"Error": {"Code": "ServiceUnavailable"}}, "UpdateItem")
        real(job, status, **options)

    monkeypatch.setattr(follow_ups, "job_ended", blip_once)
    monkeypatch.setattr(delivery, "hand_back_seconds", lambda *args, **kwargs: 0)
    sent: list[str] = []
    real_send = queue.send
    monkeypatch.setattr(queue, "send", lambda message, delay=0: sent.append(message.id) or real_send(message, delay))

    first = poll(aws)
    # Recorded, but its batch not counted: handed back; and its batch-mates too, as the store failed moments ago.
    assert first is not None and len(first.failed) >= 1
    assert {job_store.get(job_id).status for job_id in batches.member_ids("acme", batch_items.get(created["id"]))} == {
        Status.SUCCEEDED
    }
    time.sleep(0.6)  # the worker leaves the store alone for a moment after a failure (its breaker)
    _drain(aws)

    shown = _api("GET", f"/v1/batches/{created['id']}", key=key)[1]
    assert (shown["status"], shown["succeeded"]) == ("succeeded", 3)
    assert sorted(sent) == sorted([shown["callbacks"]["on_complete"], shown["callbacks"]["on_success"]])


def test_a_retried_dead_job_reopens_its_batch_and_a_callback_that_ran_does_not_run_again(aws, key):
    jobs = [{"type": "echo"}, {"type": "fail", "payload": {"times": 1}, "max_attempts": 1}]
    created = _api("POST", "/v1/batches", {"jobs": jobs, **EVERY_CALLBACK}, key)[1]
    _drain(aws)
    finished = _api("GET", f"/v1/batches/{created['id']}", key=key)[1]
    assert finished["status"] == "completed_with_failures"
    dead_job = batches.member_ids("acme", batch_items.get(created["id"]))[1]

    retry.retry("acme", dead_job)
    reopened = _api("GET", f"/v1/batches/{created['id']}", key=key)[1]
    assert (reopened["status"], reopened["pending"], reopened["dead"]) == ("running", 1, 0)
    _drain(aws)

    final = _api("GET", f"/v1/batches/{created['id']}", key=key)[1]
    assert (final["status"], final["succeeded"], final["dead"]) == ("succeeded", 2, 0)
    assert final["callbacks"]["on_complete"] == finished["callbacks"]["on_complete"]
    assert job_store.get(final["callbacks"]["on_complete"]).attempts == 1  # ran once, not again
    assert job_store.get(final["callbacks"]["on_success"]).status is Status.SUCCEEDED  # first all-succeeded


def test_cancelling_a_batch_cancels_its_jobs_not_started_and_runs_no_callback(aws, key):
    created = _api("POST", "/v1/batches", {"jobs": [{"type": "echo"}] * 5, **EVERY_CALLBACK}, key)[1]

    status, cancelled = _api("POST", f"/v1/batches/{created['id']}/cancel", key=key)
    _drain(aws)

    assert status == 200
    assert (cancelled["status"], cancelled["cancelled"], cancelled["pending"]) == ("cancelled", 5, 0)
    shown = _api("GET", f"/v1/batches/{created['id']}", key=key)[1]
    assert (shown["status"], shown["cancelled"], shown["callbacks"]) == (
        "cancelled",
        5,
        {"on_complete": None, "on_success": None},
    )


def test_a_single_cancelled_member_counts_as_cancelled_and_the_batch_completes_with_failures(aws, key):
    created = _api("POST", "/v1/batches", {"jobs": [{"type": "echo"}] * 2, **EVERY_CALLBACK}, key)[1]
    first = batches.member_ids("acme", batch_items.get(created["id"]))[0]

    cancel.cancel("acme", first)  # no record yet: its message, arriving, counts it
    _drain(aws)

    shown = _api("GET", f"/v1/batches/{created['id']}", key=key)[1]
    assert (shown["status"], shown["cancelled"], shown["succeeded"]) == ("completed_with_failures", 1, 1)
    assert shown["callbacks"]["on_complete"] is not None and shown["callbacks"]["on_success"] is None


# --- interleavings --------------------------------------------------------------------------------

# What can happen to a member, in any order across members: its run ends (succeeded or dead) and its
# follow-ups run; the worker dies after one step of them (after the count, after the settle, after a
# callback's send but before its mark); a redelivery repeats every step; a dead member is retried.
_EVENTS = ("succeed", "die", "crash_after_mark", "crash_after_settle", "crash_after_send", "redeliver", "retry")


@st.composite
def _histories(draw: st.DrawFn) -> tuple[int, list[tuple[str, int]]]:
    size = draw(st.integers(1, 4))
    return size, draw(st.lists(st.tuples(st.sampled_from(_EVENTS), st.integers(0, size - 1)), max_size=30))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=_histories())
def test_counts_always_equal_members_states_and_each_callback_is_enqueued_once(aws, monkeypatch, history):
    size, events = history
    specs = {kind: {"type": "echo", "payload": {}} for kind in ("on_complete", "on_success")}
    request = batches.BatchRequest(jobs=[JobRequest(JobSpec("echo"))] * size, **specs)
    sends: list[tuple[str, str]] = []  # (kind, callback job id) of every callback message sent
    monkeypatch.setattr(queue, "send_batch", lambda messages: [None] * len(messages))
    monkeypatch.setattr(queue, "send", lambda message, delay=0: sends.append((message.parent["callback"], message.id)))
    real_mark_sent = batch_items.mark_sent
    batch = batches.create("acme", request)
    record: list[tuple[Status | None, int]] = [(None, 0)] * size  # each member's record: its end (or None), run
    crashes_after_send = 0
    ever_all_succeeded = False

    for event, index in events:
        status, run = record[index]
        member = BatchMember(batch.id, index, run)
        if event in ("succeed", "die") and status is None:
            record[index] = (Status.SUCCEEDED if event == "succeed" else Status.DEAD, run)
            members.member_ended(member, record[index][0])
        elif event == "crash_after_mark" and status is None:
            record[index] = (Status.SUCCEEDED, run)
            batch_members.mark(batch.id, index, MemberState(batch_members.DONE, run))
        elif event == "crash_after_settle" and status is None:
            record[index] = (Status.SUCCEEDED, run)
            batch_items.settle(batch_members.mark(batch.id, index, MemberState(batch_members.DONE, run)), time.time())
        elif event == "crash_after_send" and status is None:
            record[index] = (Status.SUCCEEDED, run)
            crashes_after_send += 1
            # The worker dies after the callback's send, before its mark.
            monkeypatch.setattr(batch_items, "mark_sent", lambda *args, **kwargs: None)
            members.member_ended(member, Status.SUCCEEDED)
            monkeypatch.setattr(batch_items, "mark_sent", real_mark_sent)
        elif event == "redeliver" and status is not None:
            members.member_ended(member, status)
        elif event == "retry" and status is Status.DEAD:
            record[index] = (None, run + 1)
            members.member_reopened("acme", batch.id, index, run + 1)
        ends = [status for status, _ in record]
        stored = batch_items.get(batch.id)
        assert (stored.pending, stored.succeeded, stored.dead) == (
            ends.count(None),
            ends.count(Status.SUCCEEDED),
            ends.count(Status.DEAD),
        )
        ever_all_succeeded |= ends.count(Status.SUCCEEDED) == size

    for index, (status, run) in enumerate(record):  # each message comes back until its follow-ups are done
        if status is not None:
            members.member_ended(BatchMember(batch.id, index, run), status)
    final = batch_items.get(batch.id)
    all_ended = final.pending == 0
    for kind in specs:
        ids = {callback_id for sent_kind, callback_id in sends if sent_kind == kind}
        assert len(ids) <= 1  # at most one callback job, ever
        assert sum(1 for sent_kind, _ in sends if sent_kind == kind) <= 1 + crashes_after_send
        if kind == "on_success" and ids:
            assert ever_all_succeeded  # never on a batch that had not all succeeded
        if all_ended and (kind == "on_complete" or final.status == "succeeded"):
            assert kind in final.sent and len(ids) == 1  # at least once
