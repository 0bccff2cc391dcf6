"""A tenant's share of the fleet (shared/worker/admit/running_share.py, shared/store/tenants/running_slots.py): at most
`max_running` of its jobs run at once; the rest wait, unclaimed and using no attempt, and the slots
count exactly whatever order batches take, give back and die in."""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

import moto.core
import moto.sqs.models
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.worker.handler import worker
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.tenants import running_slots
from shared.tenants import quotas
from tests.unit.worker_harness import messages_held, poll, record, send


def _send(aws: dict[str, Any], tenant: str, job_type: str, count: int) -> list[JobMessage]:
    messages = [build_message(tenant, JobRequest(JobSpec(job_type, payload=n)), time.time()) for n in range(count)]
    for message in messages:
        send(aws, message.to_json())
    return messages


def test_jobs_over_their_tenants_cap_wait_unclaimed_while_another_tenant_runs(aws, monkeypatch):
    quotas.set_limits("noisy", max_running=2)
    running_now: list[int] = []
    most_at_once = [0]
    lock = threading.Lock()
    both_running = threading.Event()

    def slow(payload: object, context: job_types.JobContext) -> None:
        with lock:
            running_now.append(1)
            most_at_once[0] = max(most_at_once[0], len(running_now))
            if len(running_now) == 2:
                both_running.set()
        # Each holds until its batch-mate runs beside it (bounded: a batch run one job at a time times
        # out here and fails the count below), then long enough for a third to show if one ran.
        both_running.wait(timeout=6)
        time.sleep(0.3)
        with lock:
            running_now.pop()

    monkeypatch.setitem(job_types._REGISTRY, "slow", job_types.JobType(name="slow", run=slow, timeout_seconds=10))
    noisy = _send(aws, "noisy", "slow", 5)
    quiet = _send(aws, "quiet", "echo", 3)

    batch = poll(aws)

    assert batch is not None and len(batch.message_ids) == 8
    assert len(batch.failed) == 3  # three of noisy's handed back
    assert most_at_once[0] == 2
    assert [record(m.id).status for m in quiet] == [Status.SUCCEEDED] * 3
    records = [record(m.id) for m in noisy]
    assert [r.status for r in records if r is not None] == [Status.SUCCEEDED] * 2
    assert records.count(None) == 3  # never claimed: no attempt used (a message made in process has no record yet)
    # The three wait a few seconds (their visibility set with the batch's cover, in the same call).
    assert aws["sqs"].receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10).get("Messages", []) == []
    assert running_slots.running("noisy") == 0  # the batch gave its slots back as it ended
    assert running_slots.running("quiet") == 0


def test_a_cap_of_zero_is_no_cap_and_costs_no_write(aws, monkeypatch):
    quotas.set_limits("bulk", max_running=0)
    taken: list[str] = []
    monkeypatch.setattr(running_slots, "take", lambda tenant, *args: taken.append(tenant) or 0)
    messages = _send(aws, "bulk", "echo", 10)

    batch = poll(aws)

    assert batch is not None and batch.failed == []
    assert taken == []
    assert [record(m.id).status for m in messages] == [Status.SUCCEEDED] * 10


def test_a_dead_batchs_slots_come_back_when_its_hold_ends(aws):
    cap = running_slots.Cap(slots=4, holders=2)
    assert running_slots.take("acme", "dead-batch", 3, cap, until=100.0, now=50.0) == 3
    assert running_slots.take("acme", "live", 3, cap, until=200.0, now=60.0) == 1  # room for one
    # Past the dead batch's hold: the next taker prunes it and finds its room.
    assert running_slots.take("acme", "next", 3, cap, until=300.0, now=150.0) == 3
    assert running_slots.running("acme") == 4
    assert {h.id for h in running_slots.holders("acme")} == {"live", "next"}
    running_slots.give_back("acme", "dead-batch", 3)  # a late give-back of a pruned hold counts nothing
    assert running_slots.running("acme") == 4


@st.composite
def _interleavings(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    return draw(
        st.lists(
            st.tuples(st.sampled_from(["take", "give_back", "time"]), st.integers(0, 4), st.integers(1, 6)),
            max_size=25,
        )
    )


def test_a_tenants_jobs_hold_at_most_its_share_of_batches_however_they_are_spread(aws):
    # Three of a tenant's jobs in each of many batches: by jobs alone, a cap of 20 would let 6 batches
    # (6 worker environments) hold them; by batches, 2 (20 / 10).
    cap = running_slots.Cap(slots=20, holders=2)
    taken = [running_slots.take("spread", f"batch{n}", 3, cap, until=100.0, now=50.0) for n in range(6)]
    assert taken == [3, 3, 0, 0, 0, 0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_interleavings(), slots=st.integers(1, 8), most_holders=st.integers(1, 3))
def test_slots_held_always_equal_the_sum_of_live_holders_and_never_exceed_the_cap(aws, steps, slots, most_holders):
    cap = running_slots.Cap(slots=slots, holders=most_holders)
    tenant = f"t{abs(hash((tuple(steps), slots, most_holders))) % 10**9}"
    now = 1000.0
    held: dict[str, tuple[int, float]] = {}  # holder -> (slots, until), as the model sees it
    for action, holder_number, amount in steps:
        holder = f"b{holder_number}"
        if action == "time":
            now += amount * 10
        elif action == "take" and holder not in held:
            until = now + amount * 7
            live = {h: n for h, (n, ends) in held.items() if ends > now}
            got = running_slots.take(tenant, holder, amount, cap, until=until, now=now)
            # Ended holds pruned, the room left taken: no more, no less.
            room = 0 if len(live) >= cap.holders else cap.slots - sum(live.values())
            assert got == max(0, min(amount, room))
            if got:
                held[holder] = (got, until)
            held = {h: v for h, v in held.items() if h in {x.id for x in running_slots.holders(tenant)}}
        elif action == "give_back" and holder in held:
            running_slots.give_back(tenant, holder, held.pop(holder)[0])
        stored = running_slots.holders(tenant)
        assert running_slots.running(tenant) == sum(h.slots for h in stored)
        assert running_slots.running(tenant) <= cap.slots
        assert len(stored) <= cap.holders


@pytest.mark.parametrize("value", [-1, 2.5])
def test_max_running_must_be_a_whole_number_of_jobs(aws, value):
    with pytest.raises(ValueError):
        quotas.set_limits("acme", max_running=value)


# --- when taking the slots fails (docs/decisions/running-cap.md "When taking slots fails") ----------------


def _failing_take(monkeypatch: pytest.MonkeyPatch, code: str, *tenants: str) -> None:
    """Taking these tenants' slots fails with `code`; the others' are taken as usual."""
    take = running_slots.take

    def failing(tenant: str, *args: Any, **kwargs: Any) -> int:
        if tenant in tenants:
            raise ClientError({"Error": {"Code": code, "Message": "injected"}}, "UpdateItem")
        return take(tenant, *args, **kwargs)

    monkeypatch.setattr(running_slots, "take", failing)


def _breaker_trips(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    trips: list[float] = []
    failed = worker.breaker.failed

    def counted() -> None:
        trips.append(time.monotonic())
        failed()

    monkeypatch.setattr(worker.breaker, "failed", counted)
    return trips


def _found_at_its_cap(aws: Any, tenant: str) -> None:
    """This process's last take finds `tenant` at its cap of 1 (a slot held elsewhere): its job waits."""
    quotas.set_limits(tenant, max_running=1)
    now = time.time()
    running_slots.take(tenant, "elsewhere", 1, running_slots.Cap(1, 1), until=now + 3600, now=now)
    _send(aws, tenant, "echo", 1)
    assert poll(aws).failed != []
    assert tenant in worker.at_cap


def test_R4_a_throttled_take_of_a_tenant_last_found_at_its_cap_keeps_its_jobs_waiting_and_trips_no_breaker(
    aws, monkeypatch
):
    monkeypatch.setattr(worker, "at_cap", set())
    _found_at_its_cap(aws, "attacker")
    _failing_take(monkeypatch, "ProvisionedThroughputExceededException", "attacker")
    trips = _breaker_trips(monkeypatch)
    attacker = _send(aws, "attacker", "echo", 3)
    victim = _send(aws, "victim", "echo", 2)

    batch = poll(aws)

    assert batch is not None and len(batch.failed) == 3  # the attacker's three wait...
    assert [record(m.id) for m in attacker] == [None] * 3  # ...unclaimed: the cap fails closed for its tenant
    # The victim's jobs ran under their claims and were recorded at once: no breaker sent them down the
    # store blip's path (run unclaimed, outcomes carried in messages).
    assert [record(m.id).status for m in victim] == [Status.SUCCEEDED] * 2
    assert trips == []
    assert messages_held(aws) == 4  # the attacker's, waiting: no outcome message carries anything


def test_a_throttled_take_of_a_tenant_below_its_cap_runs_up_to_its_cap_uncounted_and_trips_no_breaker(aws, monkeypatch):
    # A store blip answers with throttles as well as 5xx: a tenant not known to be full keeps running
    # through it (up to its cap of the batch's jobs), so the blip costs its jobs no wait.
    monkeypatch.setattr(worker, "at_cap", set())
    quotas.set_limits("quiet", max_running=2)
    _failing_take(monkeypatch, "ThrottlingException", "quiet")
    trips = _breaker_trips(monkeypatch)
    jobs = _send(aws, "quiet", "echo", 3)

    batch = poll(aws)

    statuses = [None if (found := record(m.id)) is None else found.status for m in jobs]
    assert statuses.count(Status.SUCCEEDED) == 2 and statuses.count(None) == 1  # 2 ran, claimed; 1 waits
    assert batch is not None and len(batch.failed) == 1
    assert running_slots.running("quiet") == 0  # uncounted: no slot was taken
    assert trips == []


def test_a_store_failing_while_taking_slots_runs_a_tenant_below_its_cap_uncounted_not_one_last_found_full(
    aws, monkeypatch
):
    runs: list[object] = []
    monkeypatch.setitem(
        job_types._REGISTRY,
        "counted",
        job_types.JobType(name="counted", run=lambda payload, context: runs.append(payload), timeout_seconds=5),
    )
    monkeypatch.setattr(worker, "at_cap", set())
    quotas.set_limits("full", max_running=1)
    now = time.time()
    running_slots.take("full", "elsewhere", 1, running_slots.Cap(1, 1), until=now + 3600, now=now)
    _send(aws, "full", "counted", 1)
    assert poll(aws).failed != []  # it waits: its tenant is found at its cap
    assert worker.at_cap == {"full"}
    _failing_take(monkeypatch, "InternalServerError", "full", "quiet")
    full = _send(aws, "full", "counted", 1)
    quiet = _send(aws, "quiet", "counted", 1)
    monkeypatch.setattr(worker.breaker, "down_until", 0.0)

    poll(aws)

    assert runs == [quiet[0].payload]  # the tenant below its cap ran (uncounted, a store blip's way)
    assert record(full[0].id) is None  # the one last found full waited


def test_two_copies_of_one_message_under_a_cap_of_one_run_their_job_rather_than_both_wait(aws):
    # SQS's at-least-once delivery: a second copy of a stored message (same MessageId) in the same batch. Counted
    # as two jobs, the copy over the cap made both wait, and copies handed back alike came back together forever
    # (found by tests/unit/test_invariant.py).
    quotas.set_limits("one", max_running=1)
    (job,) = _send(aws, "one", "echo", 1)
    queue = moto.sqs.models.sqs_backends[moto.core.DEFAULT_ACCOUNT_ID]["us-east-1"].queues[
        aws["queue_url"].rsplit("/", 1)[-1]
    ]
    again = copy.deepcopy(queue._messages[0])
    again.receipt_handle, again._old_receipt_handles, again.visible_at = None, [], 0.0
    queue._messages.append(again)

    batch = poll(aws)

    assert batch is not None and len(batch.message_ids) == 2
    assert record(job.id).status is Status.SUCCEEDED
