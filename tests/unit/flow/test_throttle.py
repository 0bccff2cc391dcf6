"""Throttles (shared/flow/throttle.py, shared/store/flow/throttle_items.py): at most `limit` starts of a key in any
window of `period_seconds`, each waiting job given its turn in the order it came, on the arithmetic alone and on
moto under racing workers, lost answers, store failures, dead and late jobs and retries."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared import settings as corral_settings
from shared.errors import InvalidRequest
from shared.flow import limits as corral_limits
from shared.flow.throttle import MAX_RUNS, StartLog, Throttle, Turn, starts_within_limit, take
from shared.store.flow import throttle_items

HALF_GRACE = corral_limits.THROTTLE_START_GRACE_SECONDS / 2


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"key": "k", "limit": 0, "period_seconds": 60}, "throttle.limit"),
        ({"key": "k", "limit": 1_001, "period_seconds": 60}, "throttle.limit"),
        ({"key": "k", "limit": True, "period_seconds": 60}, "throttle.limit"),
        ({"key": "k", "limit": 5, "period_seconds": 0}, "throttle.period_seconds"),
        ({"key": "k", "limit": 5, "period_seconds": 86_401}, "throttle.period_seconds"),
        ({"key": "k", "limit": 5, "period_seconds": 1.5}, "throttle.period_seconds"),
        ({"key": "x" * 129, "limit": 5, "period_seconds": 60}, "throttle.key"),
        ({"key": "", "limit": 5, "period_seconds": 60}, "throttle.key"),
        ({"key": "k", "limit": 5}, "throttle.period_seconds"),
        ({"key": "k", "limit": 5, "period_seconds": 60, "burst": 2}, "throttle.burst"),
        ("k:5/60", "throttle"),
    ],
)
def test_a_throttle_out_of_range_is_refused_naming_its_field(value, field):
    with pytest.raises(InvalidRequest) as refused:
        Throttle.parse(value)

    assert refused.value.field == field


def test_a_throttle_in_range_is_read_whole():
    throttle = Throttle.parse({"key": "x" * 128, "limit": 1_000, "period_seconds": 86_400})

    assert throttle == Throttle("x" * 128, 1_000, 86_400)
    assert Throttle.parse(throttle.to_dict()) == throttle


def test_an_idle_key_starts_its_limit_at_once_and_gives_the_rest_turns_in_order_a_window_apart():
    throttle = Throttle("k", limit=5, period_seconds=2)

    log, turns = take(StartLog(), throttle, 1_000.0, 12)

    assert [turn.at for turn in turns[:5]] == [1_000.0] * 5  # the window has room: no wait at all
    assert all(turn.at > 1_002.0 for turn in turns[5:])  # the rest wait for the window to move on
    assert [turn.at for turn in turns] == sorted(turn.at for turn in turns)  # in the order they were given
    assert len({turn.at for turn in turns[5:10]}) == 1 and turns[10].at > turns[9].at  # five a window, no more
    # A window's worth a period and a little (the grace, the grid) after the one before: never all at one edge.
    assert turns[10].at - turns[5].at < 2 + corral_limits.THROTTLE_START_GRACE_SECONDS + 2 * 2 / 64
    assert starts_within_limit([turn.start_by for turn in turns], throttle)
    assert log.counted == 5


def test_a_key_used_once_an_hour_never_waits():
    throttle = Throttle("k", limit=1, period_seconds=60)
    log = StartLog()
    for hour in range(5):
        log, [turn] = take(log, throttle, 3_600.0 * (hour + 1), 1)
        assert turn.at == 3_600.0 * (hour + 1)
    assert len(log.runs) == 1


def test_ten_a_minute_holds_however_short_the_jobs_are():
    """Distinct from a concurrency key: a job that takes 1 ms frees nothing; only the window moving on does."""
    throttle = Throttle("partner", limit=10, period_seconds=60)

    _, turns = take(StartLog(), throttle, 0.0, 30)

    assert starts_within_limit([turn.at for turn in turns], throttle)
    assert sum(1 for turn in turns if turn.at < 60.0) == 10


# The arithmetic alone, over arbitrary interleavings ----------------------------------------------------------


@st.composite
def _throttles(draw: st.DrawFn) -> Throttle:
    return Throttle("k", limit=draw(st.integers(1, 12)), period_seconds=draw(st.integers(1, 30)))


@settings(max_examples=300, deadline=None)
@given(
    throttle=_throttles(),
    steps=st.lists(
        st.tuples(
            st.floats(0, 10, allow_nan=False),  # how long after the step before it
            st.integers(1, 10),  # jobs in the batch taking turns
            st.floats(-0.05, 0.05, allow_nan=False),  # the taking worker's clock, against the true one
            st.lists(st.floats(0, 1), min_size=10, max_size=10),  # where in its turn each job starts
        ),
        min_size=1,
        max_size=40,
    ),
)
def test_no_window_holds_more_than_the_limit_and_turns_come_in_the_order_given(throttle, steps):
    log, now, starts, previous = StartLog(), 1_000_000.0, [], None
    for after, count, skew, where in steps:
        now += after
        log, turns = take(log, throttle, now + skew, count)
        for turn, fraction in zip(turns, where, strict=False):
            # It starts when its worker's clock reads within its turn; the true time is that less the skew.
            starts.append(turn.at + fraction * (turn.start_by - turn.at) - skew)
            assert previous is None or turn.at >= previous
            previous = turn.at
        assert len(log.runs) <= MAX_RUNS
        assert log.counted <= throttle.limit

    assert starts_within_limit(starts, throttle)


@settings(max_examples=200, deadline=None)
@given(throttle=_throttles(), count=st.integers(1, 200))
def test_a_backlog_starts_about_limit_a_period(throttle, count):
    """As the window allows: no more than the grace and the grid's step are lost per period."""
    _, turns = take(StartLog(), throttle, 0.0, count)

    windows_needed = (count - 1) // throttle.limit
    cycle = throttle.period_seconds + corral_limits.THROTTLE_START_GRACE_SECONDS + throttle.grid_ms / 1000
    assert turns[-1].at <= windows_needed * cycle + 1e-6
    assert turns[-1].at >= windows_needed * throttle.period_seconds


# On the store: racing workers, lost answers, failures, dead, late and retried jobs ----------------------------


@dataclass
class _Fleet:
    """Jobs waiting for a turn, and the starts made, on the true clock."""

    waiting: list[str]
    starts: list[float] = field(default_factory=list)
    started: dict[str, int] = field(default_factory=dict)
    turns_in_order: list[list[float]] = field(default_factory=list)


_FAULTS = ("none", "rival", "blip before the write", "answer lost")
_FATES = ("starts", "starts", "starts", "dies", "late", "fails and retries")


def _failing(when: str) -> ClientError:
    return ClientError({"Error": {"Code": "InternalServerError", "Message": f"injected {when}"}}, "UpdateItem")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    throttle=_throttles(),
    steps=st.lists(
        st.tuples(
            st.floats(0, 5, allow_nan=False),
            st.integers(1, 10),
            st.floats(-0.05, 0.05, allow_nan=False),
            st.sampled_from(_FAULTS),
            st.lists(st.tuples(st.sampled_from(_FATES), st.floats(0, 1)), min_size=10, max_size=10),
        ),
        min_size=1,
        max_size=25,
    ),
)
def test_turns_taken_on_the_store_never_let_a_window_hold_more_than_the_limit(aws, monkeypatch, throttle, steps):
    tenant, key = "acme", uuid.uuid4().hex
    throttle = Throttle(key, throttle.limit, throttle.period_seconds)
    fleet = _Fleet(waiting=[f"job-{n}" for n in range(60)])
    real_write = throttle_items._write
    fault: dict[str, Any] = {"kind": "none", "rival_at": 0.0}

    def faulty_write(*args: Any) -> Any:
        kind, fault["kind"] = fault["kind"], "none"
        if kind == "rival":  # another worker takes a turn between this one's read and its write
            rival_turns = throttle_items.take_turns(tenant, throttle, 1, fault["rival_at"])
            fleet.starts.append(rival_turns[0].at - 0.0)
        if kind == "blip before the write":
            raise _failing(kind)
        written = real_write(*args)
        if kind == "answer lost":
            raise _failing(kind)
        return written

    monkeypatch.setattr(throttle_items, "_write", faulty_write)
    now = 1_000_000.0
    for after, count, skew, kind, fates in steps:
        now += after
        batch = fleet.waiting[:count]
        if not batch:
            break
        fault.update(kind=kind, rival_at=now)
        try:
            turns = throttle_items.take_turns(tenant, throttle, len(batch), now + skew)
        except (ClientError, throttle_items.ThrottleContended):
            continue  # the batch's jobs wait and try again at a later step
        assert [turn.at for turn in turns] == sorted(turn.at for turn in turns)
        fleet.turns_in_order.append([turn.at for turn in turns])
        del fleet.waiting[: len(batch)]
        for job, turn, (fate, where) in zip(batch, turns, fates, strict=False):
            _play(fleet, job, turn, fate, where, skew)

    assert starts_within_limit(fleet.starts, throttle)
    flat = list(itertools.chain.from_iterable(fleet.turns_in_order))
    assert flat == sorted(flat)  # batch after batch, in the order they took turns


def _play(fleet: _Fleet, job: str, turn: Turn, fate: str, where: float, skew: float) -> None:
    """What becomes of a job given `turn` by a worker whose clock is `skew` ahead of the true one."""
    if fate == "dies":
        return  # its turn goes unused: the key starts fewer, never more
    if fate == "late":
        fleet.waiting.append(job)  # it could not start by start_by: it takes another turn
        return
    fleet.starts.append(turn.at + where * (turn.start_by - turn.at) - skew)
    if fate == "fails and retries":
        fleet.waiting.append(job)  # its next attempt is a start too: it takes a turn of its own


def test_a_throttled_take_that_keeps_losing_races_raises_so_its_jobs_wait(aws, monkeypatch):
    throttle = Throttle("busy", 2, 10)
    real_write = throttle_items._write

    def beaten(*args: Any) -> Any:
        monkeypatch.setattr(throttle_items, "_write", real_write)
        throttle_items.take_turns("acme", throttle, 1, 1_000.0)  # another worker writes first, every time
        monkeypatch.setattr(throttle_items, "_write", beaten)
        return real_write(*args)

    monkeypatch.setattr(throttle_items, "_write", beaten)

    with pytest.raises(throttle_items.ThrottleContended):
        throttle_items.take_turns("acme", throttle, 1, 1_000.0)
    assert throttle_items.read("acme", "busy")[1] == corral_limits.THROTTLE_TAKE_TRIES  # the rivals' writes only


def test_the_log_item_stays_small_whatever_the_limit(aws):
    throttle = Throttle("wide", limit=1_000, period_seconds=60)
    for second in range(120):
        throttle_items.take_turns("acme", throttle, 10, 1_000.0 + second / 2)

    log, version = throttle_items.read("acme", "wide")
    assert version == 120
    assert len(log.runs) <= MAX_RUNS
    item = aws["dynamodb"].get_item(TableName=corral_settings.TABLE_NAME, Key={"pk": {"S": "throttle#acme#wide"}})
    assert len(str(item["Item"]["runs"])) < 4_000
