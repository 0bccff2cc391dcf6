"""Concurrency keys (shared/jobs/concurrency.py, shared/worker/admit/key_slots.py): at most `limit` of a
tenant's jobs with one key run at once, fleet-wide; the others wait, in their batch or handed back,
without using an attempt; the limit fails closed while the store fails."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from functions.api.handler import handler as api_handler
from local.events import FakeLambdaContext, http_api_event
from shared import settings
from shared.jobs import job_types
from shared.jobs.concurrency import KeyUnreadable, concurrency_of
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.message import JobMessage, UnreadableMessage
from shared.model.outcome import read_message
from shared.model.spec import Concurrency, JobSpec
from shared.model.states import Status
from shared.store.id_secret import id_secret
from shared.store.tenants import running_slots
from shared.tenants import tenants
from shared.worker.breaker import StoreBreaker
from tests.unit.worker_harness import dead_letters, poll, record, send


class _Overlap:
    """A job type's runs, as (start, end) times, to tell how many ran at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.runs: list[tuple[float, float]] = []
        self._lock = threading.Lock()

    def __call__(self, payload: Any, context: job_types.JobContext) -> Any:
        started = time.monotonic()
        time.sleep(self.seconds)
        with self._lock:
            self.runs.append((started, time.monotonic()))
        return payload

    def most_at_once(self) -> int:
        edges = sorted([(start, 1) for start, _ in self.runs] + [(end, -1) for _, end in self.runs])
        running = most = 0
        for _, change in edges:
            running += change
            most = max(most, running)
        return most


def _register(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    run: Callable[[Any, job_types.JobContext], Any],
    **options: Any,
) -> None:
    monkeypatch.setitem(job_types._REGISTRY, name, job_types.JobType(name=name, run=run, timeout_seconds=5, **options))


def _send(aws: dict[str, Any], tenant: str, job_type: str, payloads: list[Any], **options: Any) -> list[JobMessage]:
    messages = [
        build_message(tenant, JobRequest(JobSpec(job_type, payload), **options), time.time()) for payload in payloads
    ]
    for message in messages:
        send(aws, message.to_json())
    return messages


KEY = Concurrency("partner-api", 2)


# --- what a job says -----------------------------------------------------------------------------


def test_a_jobs_own_key_travels_in_its_message_and_is_checked_there(aws):
    message = build_message("acme", JobRequest(JobSpec("echo", 1), concurrency=KEY), time.time())
    assert read_message(message.to_json(), sent_at=0, secret=id_secret()).concurrency == KEY
    for bad in ({"key": "", "limit": 2}, {"key": "k", "limit": 0}, {"key": "k", "limit": 1001}, {"key": "k"}, "k"):
        body = {**message.to_dict(), "concurrency": bad}
        with pytest.raises(UnreadableMessage, match="concurrency"):
            JobMessage.from_data(body, sent_at=0, secret=id_secret())


def test_the_api_takes_a_key_and_names_the_field_it_refuses(aws):
    key = tenants.create_key("acme")

    def post(body: dict[str, Any]) -> dict[str, Any]:
        return api_handler(http_api_event("POST", "/v1/jobs", body, key), FakeLambdaContext())

    accepted = post({"type": "echo", "concurrency": {"key": "k", "limit": 3}})
    refused = post({"type": "echo", "concurrency": {"key": "k", "limit": 0}})
    too_long = post({"type": "echo", "concurrency": {"key": "k" * 129, "limit": 1}})

    assert accepted["statusCode"] == 202
    assert refused["statusCode"] == 422 and '"field":"concurrency.limit"' in refused["body"]
    assert too_long["statusCode"] == 422 and '"field":"concurrency.key"' in too_long["body"]


def test_a_types_key_comes_from_the_payload_and_a_jobs_own_key_wins(monkeypatch):
    _register(monkeypatch, "per-account", lambda p, c: p, concurrency_key="account", concurrency_limit=1)
    message = JobMessage(
        id="j", tenant="acme", type="per-account", payload={"account": "a1"}, max_attempts=1, enqueued_at=1
    )

    assert concurrency_of(message) == Concurrency("a1", 1)
    assert concurrency_of(JobMessage(**{**message.__dict__, "concurrency": KEY})) == KEY
    assert concurrency_of(JobMessage(**{**message.__dict__, "payload": {"account": 42}})) == Concurrency("42", 1)
    for payload in ({}, {"account": ""}, {"account": None}, {"account": True}, "a1", {"account": "x" * 129}):
        with pytest.raises(KeyUnreadable, match="payload field 'account'"):
            concurrency_of(JobMessage(**{**message.__dict__, "payload": payload}))


def test_a_type_declares_its_key_and_limit_together():
    with pytest.raises(ValueError, match="concurrency_limit"):
        job_types.job_type("half-declared", concurrency_key="account")
    with pytest.raises(ValueError, match="concurrency_key"):
        job_types.job_type("limit-only", concurrency_limit=2)
    with pytest.raises(ValueError, match="must name a payload field"):  # code would not reach the worker
        job_types.job_type("a-function", concurrency_key=lambda p: "k", concurrency_limit=2)
    declared = job_types.JobType(name="x", run=lambda p, c: p, concurrency_key="account", concurrency_limit=4)
    # The worker holds the declaration, not the code: the key is data in it, read back as it was.
    assert (declared.declaration()["concurrency_key"], declared.declaration()["concurrency_limit"]) == ("account", 4)


# --- the worker ----------------------------------------------------------------------------------


def test_a_batchs_jobs_of_one_key_run_at_most_limit_at_once_passing_their_slots_on(aws, monkeypatch):
    slow = _Overlap(0.3)
    _register(monkeypatch, "slow", slow)
    messages = _send(aws, "acme", "slow", list(range(6)), concurrency=KEY)

    batch = poll(aws)

    assert batch is not None and batch.failed == []  # all waited in the batch: none handed back
    assert slow.most_at_once() == KEY.limit
    assert [(record(m.id).status, record(m.id).attempts) for m in messages] == [(Status.SUCCEEDED, 1)] * 6
    assert running_slots.running("acme", key=KEY.key) == 0  # every slot given back


def test_a_types_key_limits_each_payloads_key_apart(aws, monkeypatch):
    slow = _Overlap(0.3)
    _register(monkeypatch, "per-account", slow, concurrency_key="account", concurrency_limit=1)
    messages = _send(aws, "acme", "per-account", [{"account": "a"}] * 3 + [{"account": "b"}] * 3)

    started = time.monotonic()
    batch = poll(aws)

    assert batch is not None and batch.failed == []
    assert slow.most_at_once() == 2  # one of a, one of b
    assert time.monotonic() - started > 0.85  # each account's three ran one after another
    assert {record(m.id).status for m in messages} == {Status.SUCCEEDED}


def test_a_job_waiting_in_its_batch_takes_a_slot_another_batch_frees(aws, monkeypatch):
    quick = _Overlap(0.05)
    _register(monkeypatch, "quick", quick)
    cap = running_slots.Cap(slots=KEY.limit, holders=KEY.limit)
    elsewhere = running_slots.take_each("acme", ["other.0", "other.1"], cap, time.time() + 60, time.time(), key=KEY.key)
    assert elsewhere == ["other.0", "other.1"]
    messages = _send(aws, "acme", "quick", [1, 2], concurrency=KEY)
    threading.Timer(0.6, lambda: [running_slots.give_back("acme", h, 1, key=KEY.key) for h in elsewhere]).start()

    started = time.monotonic()
    batch = poll(aws)

    assert batch is not None and batch.failed == []
    assert time.monotonic() - started >= 0.6
    assert [record(m.id).attempts for m in messages] == [1, 1]


def test_a_job_finding_no_slot_in_time_is_handed_back_unclaimed(aws, monkeypatch):
    monkeypatch.setattr(settings, "KEY_WAIT_IN_BATCH_SECONDS", 0.5)
    _register(monkeypatch, "quick", _Overlap(0.01))
    cap = running_slots.Cap(slots=1, holders=1)
    running_slots.take_each("acme", ["other.0"], cap, time.time() + 60, time.time(), key="busy")
    (message,) = _send(aws, "acme", "quick", [1], concurrency=Concurrency("busy", 1))

    batch = poll(aws)

    assert batch is not None and len(batch.failed) == 1
    assert record(message.id) is None  # never claimed: no attempt used
    assert running_slots.running("acme", key="busy") == 1  # only the other batch's slot


def test_a_dead_batchs_key_slots_are_freed_when_their_hold_ends(aws):
    cap = running_slots.Cap(slots=2, holders=2)
    assert running_slots.take_each("acme", ["dead.0", "dead.1"], cap, until=100.0, now=50.0, key="k") == [
        "dead.0",
        "dead.1",
    ]
    assert running_slots.take_each("acme", ["live.0"], cap, until=200.0, now=99.0, key="k") == []
    assert running_slots.take_each("acme", ["live.0", "live.1", "live.2"], cap, until=200.0, now=101.0, key="k") == [
        "live.0",
        "live.1",
    ]
    assert running_slots.running("acme", key="k") == 2
    assert running_slots.running("acme") == 0  # the tenant's own pool is another item


def test_while_the_store_fails_a_keyed_job_waits_and_an_unkeyed_one_runs_unclaimed(aws, monkeypatch):
    from functions.worker.handler import worker

    keyed = _send(aws, "acme", "echo", [1], concurrency=KEY)
    plain = _send(aws, "acme", "echo", [2])
    broken = StoreBreaker()
    broken.failed()
    monkeypatch.setattr(worker.breaker, "down_until", broken.down_until)

    batch = poll(aws)

    assert batch is not None and len(batch.failed) == 1  # the keyed job, handed back
    assert record(keyed[0].id) is None
    # Ran unclaimed: its outcome travels in an outcome message, or is recorded at once if the cooldown is over.
    assert record(plain[0].id) is None or record(plain[0].id).status is Status.SUCCEEDED


def test_a_payload_the_types_key_cannot_read_ends_dead_in_the_dlq(aws, monkeypatch):
    _register(monkeypatch, "per-account", lambda p, c: p, concurrency_key="account", concurrency_limit=1)
    (message,) = _send(aws, "acme", "per-account", [{"no": "account"}])

    poll(aws)

    assert record(message.id).status is Status.DEAD
    assert "concurrency key" in record(message.id).error
    assert [reason for _, reason in dead_letters(aws)] == [record(message.id).error]
