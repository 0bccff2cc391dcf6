"""Events and the waits for them (docs/decisions/durable-jobs.md "Events, and the race with a wait"):
matching (shared/durable/matching.py), and an event's send racing a wait's registration on the store
(shared/store/durable/event_items.py, on moto), under every interleaving of their store calls."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.durable import limits, matching
from shared.store.durable import event_items
from shared.store.durable.event_items import Waiter

NOW = 1_800_000_000.0

# Matching ------------------------------------------------------------------------------------------------

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([1.0, 2.5]), st.sampled_from("ab"))
_VALUES = st.one_of(
    _SCALARS, st.lists(_SCALARS, max_size=2), st.dictionaries(st.sampled_from("xy"), _SCALARS, max_size=2)
)
_DATA = st.dictionaries(st.sampled_from(["order", "amount", "kind", "meta"]), _VALUES, max_size=4)


@given(data=_DATA, keys=st.sets(st.sampled_from(["order", "amount", "kind", "meta"])), extra=_DATA)
def test_a_match_taken_from_the_data_matches_it_and_the_event_reads_the_page_it_is_indexed_in(data, keys, extra):
    match = {key: data[key] for key in keys if key in data}
    payload = {**extra, **data}  # the event may carry more than the wait asks for

    pair = matching.index_pair(match)

    assert matching.matches(match, payload)
    assert pair in matching.candidate_pairs(payload, {pair[0]})  # found by the one read of its index page


@pytest.mark.parametrize(
    ("match", "data", "expected"),
    [
        ({}, {"anything": 1}, True),
        ({}, "not an object", True),
        ({"order": 7}, {"order": 7.0, "amount": 3}, True),
        ({"order": 7}, {"order": "7"}, False),
        ({"paid": True}, {"paid": 1}, False),
        ({"order": 7}, {"amount": 7}, False),
        ({"tags": ["a", "b"]}, {"tags": ["a", "b"]}, True),
        ({"tags": ["a", "b"]}, {"tags": ["b", "a"]}, False),
        ({"who": {"id": 1}}, {"who": {"id": 1, "name": "x"}}, False),  # a nested object compares whole
        ({"order": 7}, "not an object", False),
    ],
)
def test_an_events_data_holds_a_match_with_equal_json_values(match, data, expected):
    assert matching.matches(match, data) is expected


def test_a_match_or_a_name_out_of_bounds_is_refused():
    assert matching.name_problem("x" * (limits.MAX_EVENT_NAME_CHARS + 1)) is not None
    assert matching.name_problem("order\npaid") is not None
    assert matching.checked_match({"big": "x" * limits.MAX_MATCH_BYTES})[0] is None
    assert matching.checked_match(["not", "an", "object"])[0] is None
    assert matching.checked_match(None) == ({}, None)


# The store: sends and registrations, one after the other -------------------------------------------------


def _waiter(job: str = "jt-1", match: dict[str, Any] | None = None, opened_at: float = NOW) -> Waiter:
    return Waiter(job_id=job, step="payment", match=match or {}, opened_at=opened_at)


def test_an_event_resumes_the_waits_its_data_matches_and_no_other_tenants(aws):
    event_items.register("acme", "paid", _waiter("jt-7", {"order": 7}), NOW)
    event_items.register("acme", "paid", _waiter("jt-8", {"order": 8}), NOW)
    event_items.register("acme", "paid", _waiter("jt-any"), NOW)
    event_items.register("globex", "paid", _waiter("jt-theirs", {"order": 7}), NOW)

    _, resumed = event_items.send("acme", "paid", "ev-1", {"order": 7, "amount": 10}, NOW + 1)

    assert sorted(waiter.job_id for waiter in resumed) == ["jt-7", "jt-any"]


def test_an_event_sent_before_a_wait_is_found_by_its_look_back_and_not_one_before_its_window(aws):
    event_items.send("acme", "paid", "ev-old", {"order": 7}, NOW - 60)
    event_items.send("acme", "paid", "ev-new", {"order": 7}, NOW + 1)
    event_items.send("acme", "paid", "ev-other", {"order": 9}, NOW + 2)

    found = event_items.register("acme", "paid", _waiter(match={"order": 7}, opened_at=NOW), NOW + 3)

    assert [event.event_id for event in found] == ["ev-new"]


def test_a_look_back_stops_at_its_windows_hour_however_many_events_came_before(aws, monkeypatch):
    for minute in range(5):
        event_items.send("acme", "tick", f"ev-{minute}", {}, NOW - 7200 + minute)
    reads: list[Any] = []
    real = event_items._dynamodb

    def counting(single_attempt: bool) -> Any:
        client = real(single_attempt)
        return _Counting(client, reads)

    monkeypatch.setattr(event_items, "_dynamodb", counting)
    found = event_items.register("acme", "tick", _waiter(opened_at=NOW), NOW)

    assert found == [] and [call for call in reads if call == "get_item"] == []  # no log item read at all


class _Counting:
    def __init__(self, client: Any, calls: list[str]) -> None:
        self._client, self._calls = client, calls

    def __getattr__(self, name: str) -> Any:
        self._calls.append(name)
        return getattr(self._client, name)


def test_waits_beyond_a_page_are_found_on_the_next_pages(aws, monkeypatch):
    monkeypatch.setattr(limits, "WAITS_PER_INDEX_PAGE", 2)
    for number in range(5):
        event_items.register("acme", "paid", _waiter(f"jt-{number}"), NOW)
    event_items.register("acme", "paid", _waiter("jt-0"), NOW)  # registered again: no second entry

    _, resumed = event_items.send("acme", "paid", "ev", {}, NOW + 1)
    event_items.unregister("acme", "paid", _waiter("jt-3"))
    _, after = event_items.send("acme", "paid", "ev-2", {}, NOW + 2)

    assert sorted(waiter.job_id for waiter in resumed) == [f"jt-{number}" for number in range(5)]
    assert sorted(waiter.job_id for waiter in after) == ["jt-0", "jt-1", "jt-2", "jt-4"]


# The race: every interleaving of a send's and a registration's store calls ------------------------------


class Turns:
    """Whose store call comes next: the threads named in `order`, one call each; once one thread is done, the
    other goes on alone, and once the order runs out, the first by name goes on until it is done: every
    interleaving is one drawn order, the same on every run."""

    def __init__(self, order: list[str], players: set[str]) -> None:
        self._order = deque(order)
        self._players = players
        self._done: set[str] = set()
        self._condition = threading.Condition()

    def take(self, who: str) -> None:
        with self._condition:
            ok = self._condition.wait_for(lambda: self._mine(who), timeout=20)
            assert ok, f"{who} never got its turn"
            if self._order and self._order[0] == who:
                self._order.popleft()
            self._condition.notify_all()

    def _mine(self, who: str) -> bool:
        others = self._players - {who} - self._done
        if not others:
            return True
        return self._order[0] == who if self._order else who < min(others)

    def finish(self, who: str) -> None:
        with self._condition:
            self._done.add(who)
            self._condition.notify_all()


class _Taking:
    """The store's client, each call waiting for its thread's turn."""

    def __init__(self, client: Any, turns: Turns, who: str) -> None:
        self._client, self._turns, self._who = client, turns, who

    def __getattr__(self, name: str) -> Callable[..., Any]:
        call = getattr(self._client, name)

        def taken(**params: Any) -> Any:
            self._turns.take(self._who)
            return call(**params)

        return taken


_counter = itertools.count()
_STORE_CLIENT = event_items._dynamodb  # as it is, before a test wraps it


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    order=st.lists(st.sampled_from(["send", "wait"]), max_size=14),
    keyed=st.booleans(),
    earlier=st.integers(0, 2),
)
def test_an_event_racing_a_waits_registration_is_seen_by_one_of_them_whatever_the_interleaving(
    aws, monkeypatch, order, keyed, earlier
):
    tenant = f"race{next(_counter)}"  # a channel of its own for each example
    monkeypatch.setattr(event_items, "_dynamodb", _STORE_CLIENT)
    for number in range(earlier):  # events before the wait's window: never its own
        event_items.send(tenant, "paid", f"ev-early-{number}", {"order": 7}, NOW - 30 - number)
    turns = Turns(order, {"send", "wait"})
    local = threading.local()
    real = event_items._dynamodb
    monkeypatch.setattr(
        event_items, "_dynamodb", lambda single_attempt: _Taking(real(single_attempt), turns, local.who)
    )
    outcome: dict[str, Any] = {}
    match = {"order": 7} if keyed else {}

    def sender() -> None:
        local.who = "send"
        try:
            outcome["send"] = event_items.send(tenant, "paid", "ev-race", {"order": 7}, NOW + 1)
        finally:
            turns.finish("send")

    def registrar() -> None:
        local.who = "wait"
        try:
            outcome["wait"] = event_items.register(tenant, "paid", _waiter(match=match, opened_at=NOW), NOW + 1)
        finally:
            turns.finish("wait")

    threads = [threading.Thread(target=sender), threading.Thread(target=registrar)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert set(outcome) == {"send", "wait"}
    seen_by_wait = [event.event_id for event in outcome["wait"]]
    seen_by_send = [waiter.job_id for waiter in outcome["send"][1]]
    assert "ev-race" in seen_by_wait or "jt-1" in seen_by_send
    assert all(event_id == "ev-race" for event_id in seen_by_wait)  # never an event from before its window
