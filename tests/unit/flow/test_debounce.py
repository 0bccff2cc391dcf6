"""Debounce (shared/flow/debounce.py, shared/store/flow/debounce_items.py): a key's jobs arriving within
`period_seconds` of each other run once, the last of them, when its group is due; every other ends `skipped` naming
the job that superseded it; on the rules alone and on moto, under late and duplicated messages, workers that die
around the run's transaction, and store failures."""

from __future__ import annotations

import heapq
import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shared import settings as corral_settings
from shared.errors import InvalidRequest
from shared.flow.debounce import Debounce, Fire, Group, NotDue, Superseded, Unmanaged, arrive, decide, ran, send_delay
from shared.store import keys
from shared.store.flow import debounce_items


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"key": "k", "period_seconds": 0}, "debounce.period_seconds"),
        ({"key": "k", "period_seconds": 86_401}, "debounce.period_seconds"),
        ({"key": "k", "period_seconds": 10, "max_wait_seconds": 5}, "debounce.max_wait_seconds"),
        ({"key": "k", "period_seconds": 10, "max_wait_seconds": 7 * 86_400 + 1}, "debounce.max_wait_seconds"),
        ({"key": "k" * 129, "period_seconds": 10}, "debounce.key"),
        ({"key": "k", "period_seconds": 10, "delay": 1}, "debounce.delay"),
        ({"period_seconds": 10}, "debounce.key"),
    ],
)
def test_a_debounce_out_of_range_is_refused_naming_its_field(value, field):
    with pytest.raises(InvalidRequest) as refused:
        Debounce.parse(value)

    assert refused.value.field == field


def _replay(arrivals: list[float], debounce: Debounce) -> tuple[Group, dict[str, tuple[int, float]]]:
    """The group after jobs j0, j1, ... arrive at `arrivals`; each job's (arrival number, message due time)."""
    group, sent = Group(), {}
    for n, at in enumerate(arrivals):
        arrival = arrive(group, f"j{n}", at, debounce)
        group = arrival.group
        sent[f"j{n}"] = (arrival.seq, at + send_delay(group, at, debounce))
    return group, sent


def test_ten_jobs_within_a_second_run_once_the_last_and_nine_are_skipped_naming_it():
    debounce = Debounce("user-7", period_seconds=2)
    group, sent = _replay([100.0 + n / 10 for n in range(10)], debounce)

    decisions = {job: decide(group, job, seq, due, debounce) for job, (seq, due) in sent.items()}

    assert decisions["j9"] == Fire()
    assert all(decisions[f"j{n}"] == Superseded(by="j9") for n in range(9))


def test_the_last_job_comes_when_its_group_is_due_and_not_before():
    debounce = Debounce("k", period_seconds=30)
    group, sent = _replay([100.0, 110.0], debounce)

    assert sent["j1"][1] == 140.0  # sent with a delay of 30 s: due 30 s after the last arrival
    assert decide(group, "j1", sent["j1"][0], 139.0, debounce) == NotDue(140.0)
    assert decide(group, "j1", sent["j1"][0], 140.0, debounce) == Fire()


def test_max_wait_fires_a_run_under_a_steady_stream():
    debounce = Debounce("k", period_seconds=2, max_wait_seconds=5)
    arrivals = [100.0 + n / 2 for n in range(40)]  # every half second for 20 s: never a 2 s lull

    runs = _runs_of(arrivals, debounce)

    assert len(runs) == 4  # without max_wait the stream would put its one run off until it stops
    assert all(run_at <= first + debounce.max_wait_seconds + 1 for run_at, first in runs)  # SQS delays: whole seconds


def _runs_of(arrivals: list[float], debounce: Debounce) -> list[tuple[float, float]]:
    """(when it runs, its group's first arrival) for each run: arrivals and deliveries in time order, every message
    delivered when it is due."""
    group, firsts, events = Group(), {}, [(at, 0, f"j{n}", 0) for n, at in enumerate(arrivals)]
    heapq.heapify(events)
    runs = []
    while events:
        now, kind, job, seq = heapq.heappop(events)
        if kind == 0:
            arrival = arrive(group, job, now, debounce)
            group, firsts[job] = arrival.group, arrival.group.first_at
            heapq.heappush(events, (now + send_delay(group, now, debounce), 1, job, arrival.seq))
            continue
        decision = decide(group, job, seq, now, debounce)
        if isinstance(decision, Fire):
            runs.append((now, firsts[job]))
            group = ran(group, job, now)
        elif isinstance(decision, NotDue):
            heapq.heappush(events, (decision.until, 1, job, seq))
    return runs


# On the store ---------------------------------------------------------------------------------------------------


@dataclass
class _World:
    """A simulated stack: the jobs' records (the table), the deliveries still to come, what each job became."""

    tenant: str
    debounce: Debounce
    events: list[tuple[float, int, str, int]] = field(default_factory=list)
    counter: itertools.count = field(default_factory=itertools.count)
    ran_at: dict[str, float] = field(default_factory=dict)
    skipped_by: dict[str, str | None] = field(default_factory=dict)
    faulted: set[str] = field(default_factory=set)

    def deliver(self, at: float, job: str, seq: int) -> None:
        heapq.heappush(self.events, (at, next(self.counter), job, seq))


def _record_key(job: str) -> dict[str, Any]:
    return {"pk": {"S": keys.job_key(job)}}


def _put_record(aws: dict[str, Any], job: str, status: str, now: float) -> bool:
    try:
        aws["dynamodb"].put_item(
            TableName=corral_settings.TABLE_NAME,
            Item=_record_key(job) | {"status": {"S": status}, "at": {"N": repr(now)}},
            ConditionExpression="attribute_not_exists(pk)",
        )
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _started_at(aws: dict[str, Any], job: str) -> float:
    item = aws["dynamodb"].get_item(TableName=corral_settings.TABLE_NAME, Key=_record_key(job))["Item"]
    return float((item.get("started_at") or item["at"])["N"])


def _status(aws: dict[str, Any], job: str) -> str | None:
    item = aws["dynamodb"].get_item(TableName=corral_settings.TABLE_NAME, Key=_record_key(job)).get("Item")
    return item["status"]["S"] if item else None


def _failing(what: str) -> ClientError:
    return ClientError({"Error": {"Code": "InternalServerError", "Message": f"injected: {what}"}}, "Transact")


_FAULTS = ("none", "none", "none", "duplicate", "late", "dies after the run", "store fails", "answer lost")


# Derandomized while debounce is not wired into the product: a random run found simultaneous arrivals (period 3,
# gaps of 0) where a job was recorded superseded by an earlier one (docs/decisions/debounce.md "Open"); fix it
# before debounce is built, then let hypothesis search again.
@settings(
    max_examples=120, deadline=None, derandomize=False, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    period=st.integers(1, 4),
    max_wait_extra=st.one_of(st.none(), st.integers(0, 6)),
    # Round gaps (0: simultaneous arrivals; a whole period: an arrival just as a group is due) are where groups meet.
    gaps=st.lists(
        st.one_of(st.sampled_from([0.0, 1.0, 2.0, 3.0]), st.floats(0, 5, allow_nan=False)), min_size=1, max_size=16
    ),
    faults=st.lists(st.tuples(st.sampled_from(_FAULTS), st.floats(0, 3, allow_nan=False)), min_size=16, max_size=16),
)
@example(period=2, max_wait_extra=None, gaps=[0.0, 3.0, 0.0, 2.0], faults=[("none", 0.0)] * 16)
def test_each_group_runs_once_its_last_job_and_every_other_job_is_skipped(
    aws, monkeypatch, period, max_wait_extra, gaps, faults
):
    debounce = Debounce(uuid.uuid4().hex, period, None if max_wait_extra is None else period + max_wait_extra)
    world = _World("acme", debounce)
    arrivals = list(itertools.accumulate(gaps, initial=1_000.0))[1:]
    jobs = [f"j{n}-{uuid.uuid4().hex[:6]}" for n in range(len(arrivals))]
    fault_of = dict(zip(jobs, faults, strict=False))
    pending_arrivals = list(zip(arrivals, jobs, strict=True))
    real_put = debounce_items._client(True).put_item
    injected: dict[str, str] = {}

    def put_item(**params: Any) -> Any:
        what = injected.pop("fault", "none")
        if what == "store fails":
            raise _failing(what)
        answer = real_put(**params)
        if what == "answer lost":
            raise _failing(what)
        return answer

    monkeypatch.setattr(debounce_items, "_client", lambda single_attempt: _Patched(single_attempt, put_item))

    while pending_arrivals or world.events:
        next_arrival = pending_arrivals[0][0] if pending_arrivals else float("inf")
        if world.events and world.events[0][0] < next_arrival:
            now, _, job, seq = heapq.heappop(world.events)
            _deliver(aws, world, job, seq, now, fault_of[job], injected)
            continue
        at, job = pending_arrivals.pop(0)
        arrived = debounce_items.arrive(world.tenant, debounce, job, at)
        world.deliver(at + arrived.delay_seconds + fault_of[job][1] * (fault_of[job][0] == "late"), job, arrived.seq)
        if fault_of[job][0] == "duplicate":
            world.deliver(at + arrived.delay_seconds + fault_of[job][1], job, arrived.seq)

    groups = _ground_truth(arrivals, jobs, debounce)
    for members in groups:
        last = members[-1]
        assert _status(aws, last) == "running", (members, world.ran_at, world.skipped_by)
        for job in members[:-1]:
            assert _status(aws, job) == "skipped", job
            later = members[members.index(job) + 1 :]
            assert world.skipped_by[job] in later  # a later job of its own group superseded it
    for run, first_at, last_at in ((g[-1], arrivals[jobs.index(g[0])], arrivals[jobs.index(g[-1])]) for g in groups):
        due = last_at + debounce.period_seconds
        if debounce.max_wait_seconds is not None:
            due = min(due, first_at + debounce.max_wait_seconds)
        assert _started_at(aws, run) >= due - 1e-6  # never before its group was due


class _Patched:
    """The store's client with its puts going through the test's faults."""

    def __init__(self, single_attempt: bool, put_item: Any) -> None:
        from shared.aws.clients import client, single_attempt_client

        self._real = single_attempt_client("dynamodb") if single_attempt else client("dynamodb")
        self.put_item = put_item

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _deliver(
    aws: dict[str, Any], world: _World, job: str, seq: int, now: float, fault: tuple[str, float], injected: dict
) -> None:
    """One delivery of `job`'s message at `now`, as the worker will handle it."""
    kind, extra = fault
    if kind in ("store fails", "answer lost") and job not in world.faulted:
        world.faulted.add(job)  # its first delivery that marks its group meets the fault
        injected["fault"] = kind
    try:
        outcome = debounce_items.settle(world.tenant, world.debounce, job, seq, now)
    except ClientError:
        world.deliver(now + 1 + extra, job, seq)  # handed back: the store failed, or its answer was lost
        return
    finally:
        injected.pop("fault", None)
    match outcome:
        case debounce_items.Fired() if kind == "dies after the run" and job not in world.faulted:
            world.faulted.add(job)  # died between marking its group and its claim
            world.deliver(now + 10 + extra, job, seq)  # its message comes back when its cover ends
        case NotDue(until=until):
            world.deliver(until + extra, job, seq)
        case Superseded(by=by):
            if _put_record(aws, job, "skipped", now):
                world.skipped_by[job] = by
        case debounce_items.Fired() | Unmanaged():
            if _put_record(aws, job, "running", now):  # claimed as any job: its claim decides
                world.ran_at[job] = now


def _ground_truth(arrivals: list[float], jobs: list[str], debounce: Debounce) -> list[list[str]]:
    """The groups the rule makes of these arrivals, straight from its words."""
    groups: list[list[str]] = []
    first = last = None
    for at, job in zip(arrivals, jobs, strict=True):
        within = last is not None and at < last + debounce.period_seconds
        capped = debounce.max_wait_seconds is not None and first is not None and at >= first + debounce.max_wait_seconds
        if within and not capped:
            groups[-1].append(job)
        else:
            groups.append([job])
            first = at
        last = at
    return groups


def test_a_job_superseded_in_a_group_closed_after_another_ran_names_its_own_groups_latest():
    """Arrivals at 0 (runs at 2), 3 and 3 (one group, due 5), 5 (closes it before its latest ran): the job at 3 was
    named superseded by the group that ran before its own, an earlier job."""
    debounce = Debounce("k", period_seconds=2)
    group = arrive(Group(), "a", 0.0, debounce).group
    group = ran(group, "a", 2.0)
    for job, at in (("b1", 3.0), ("b2", 3.0), ("c", 5.0)):
        group = arrive(group, job, at, debounce).group

    assert decide(group, "b1", 2, 5.0, debounce) == Superseded(by="b2")
    assert decide(group, "b2", 3, 5.0, debounce) == Fire(closed=True)


def test_an_arrival_stamped_earlier_by_another_clock_is_still_the_later_one():
    debounce = Debounce("k", period_seconds=5)
    group = arrive(Group(), "j1", 100.0, debounce).group
    later = arrive(group, "j2", 99.0, debounce)  # numbered after j1 by the store; its API instance's clock is behind

    assert later.superseded == "j1"
    assert decide(later.group, "j1", 1, 105.0, debounce) == Superseded(by="j2")
    assert decide(later.group, "j2", 2, 105.0, debounce) == Fire()


def test_a_keys_item_keeps_a_bounded_number_of_groups_that_ran():
    debounce = Debounce("k", period_seconds=1)
    group = Group()
    for n in range(100):
        group = arrive(group, f"j{n}", float(n * 2), debounce).group
        group = ran(group, f"j{n}", float(n * 2 + 1))

    assert len(group.ended) == 8


def test_an_arrival_whose_send_failed_is_undone_and_the_job_it_superseded_runs_again(aws):
    debounce = Debounce("k", period_seconds=5)
    first = debounce_items.arrive("acme", debounce, "j1", 100.0)
    second = debounce_items.arrive("acme", debounce, "j2", 101.0)

    assert second.superseded == "j1"
    assert debounce_items.undo("acme", debounce, "j2", second)

    group = debounce_items.read("acme", "k")
    assert group is not None and group.latest == "j1" and group.seq == first.seq
    assert isinstance(debounce_items.settle("acme", debounce, "j1", first.seq, 105.0), debounce_items.Fired)


def test_an_arrival_recorded_twice_is_one_arrival(aws, monkeypatch):
    """A write whose answer was lost, retried: the group does not see the job supersede itself."""
    debounce = Debounce("k", period_seconds=5)
    debounce_items.arrive("acme", debounce, "j1", 100.0)
    again = debounce_items.arrive("acme", debounce, "j1", 100.0)

    group = debounce_items.read("acme", "k")
    assert group is not None and group.seq == 1 and again.seq == 1 and group.latest == "j1"


def test_a_job_recorded_again_after_later_arrivals_keeps_its_own_arrival_number(aws):
    """The same idempotency key sent again once later jobs of the key arrived: its message must not carry the key's
    newest arrival number, with which it would look like the latest and run beside its group's run."""
    debounce = Debounce("k", period_seconds=5)
    debounce_items.arrive("acme", debounce, "j1", 100.0)
    debounce_items.arrive("acme", debounce, "j2", 110.0)  # closes j1's group before it ran
    debounce_items.arrive("acme", debounce, "j3", 111.0)

    again = debounce_items.arrive("acme", debounce, "j1", 112.0)

    assert again.seq == 1
    assert isinstance(debounce_items.settle("acme", debounce, "j1", again.seq, 112.0), debounce_items.Fired)
    assert debounce_items.settle("acme", debounce, "j2", 2, 116.0) == Superseded(by="j3")


def test_a_latest_cancelled_before_its_turn_counts_as_its_groups_run(aws):
    debounce = Debounce("k", period_seconds=5)
    debounce_items.arrive("acme", debounce, "j1", 100.0)
    debounce_items.arrive("acme", debounce, "j2", 101.0)

    assert debounce_items.ran_without_a_run("acme", debounce, "j2", 101.5)

    assert debounce_items.settle("acme", debounce, "j1", 1, 106.0) == Superseded(by="j2")
    later = debounce_items.arrive("acme", debounce, "j3", 102.0)
    assert later.superseded is None  # a new group: the cancelled one ended
