"""The journal (shared/store/durable/journal_items.py, on moto): each step recorded once, along the one state machine
of shared/durable/steps.py, whatever repeats, races or fails (docs/decisions/durable-jobs.md "The journal").

The hypothesis test drives one job's steps with interleaved writes from two attempts that each know the
journal as they last read it (the current attempt and a zombie whose lease was taken over), resolutions
(an event, a stale one, a timer, a cancel), retries of the job (a new run), and faults on each write:
its answer lost after it was applied (botocore sends it again), or a store blip before it. After every
write the store holds what the pure state machine says, starting from the store's own truth.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared import settings as corral_settings
from shared.durable import limits, steps
from shared.durable.steps import AlreadyDone, Applied, Refused, StepKind, StepRecord, StepStatus
from shared.store.durable import journal_items

JOB = "jt-journal"
TENANT = "acme"


def small_record(journal: journal_items.Journal, step: str, result: Any, now: float = 1.0e9, run: int = 0) -> Any:
    ran = steps.Ran(StepKind.STEP, result_json=json.dumps(result))
    return journal_items.record(journal, step, ran, run=run, now=now)


def test_a_step_is_recorded_in_the_order_it_first_ran_with_its_result(aws):
    journal = journal_items.Journal(JOB, TENANT)
    for step in ("reserve", "charge", "notify"):
        assert isinstance(small_record(journal, step, {"done": step}), Applied)

    held = journal_items.read(JOB)

    assert [(record.id, record.n) for record in held.ordered()] == [("reserve", 0), ("charge", 1), ("notify", 2)]
    assert held.replayed(0)[1] == {"id": "charge", "kind": "step", "status": "succeeded", "result": {"done": "charge"}}
    assert held.result_bytes == sum(len(json.dumps({"done": step})) for step in ("reserve", "charge", "notify"))


def test_a_result_too_large_for_the_journal_lives_in_an_item_of_its_own(aws):
    journal = journal_items.Journal(JOB, TENANT)
    large = "x" * (limits.STEP_RESULT_INLINE_BYTES + 1)
    small_record(journal, "render", large)

    item = aws["dynamodb"].get_item(TableName=corral_settings.TABLE_NAME, Key={"pk": {"S": f"journal#{JOB}"}})["Item"]
    held = journal_items.read(JOB)

    assert large not in json.dumps(item)  # not in the journal item
    assert held.steps["render"].spill is not None and json.loads(held.steps["render"].result_json) == large
    assert journal_items.read(JOB, results=False).steps["render"].result_json is None  # a view reads no result


def test_a_step_beyond_the_thousandth_and_results_beyond_the_recorded_limit_are_refused(aws, monkeypatch):
    monkeypatch.setattr(limits, "MAX_STEPS_PER_JOB", 3)
    journal = journal_items.Journal(JOB, TENANT)
    journal_items.record(journal, "w", steps.Suspended(StepKind.WAIT_FOR_EVENT, 2.0e9, "event", {}), run=0, now=1e9)
    for step in ("a", "b"):
        small_record(journal, step, 1)

    refused = small_record(journal, "d", 1)
    monkeypatch.setattr(limits, "MAX_RECORDED_BYTES", journal.result_bytes + 2)
    too_much = journal_items.resolve(JOB, TENANT, "w", steps.Resolved("event", "ev", '"big"'), now=1e9)

    assert isinstance(refused, journal_items.TooMuch) and "at most 3 steps; step 'd'" in refused.reason
    assert isinstance(too_much, journal_items.TooMuch) and "over the limit" in too_much.reason
    assert journal_items.read(JOB).steps["w"].status is StepStatus.WAITING


def test_an_event_and_a_timeout_racing_for_a_wait_resolve_it_once(aws):
    journal = journal_items.Journal(JOB, TENANT)
    journal_items.record(journal, "pay", steps.Suspended(StepKind.WAIT_FOR_EVENT, 100.0, "event", {}), run=0, now=50.0)

    first = journal_items.resolve(JOB, TENANT, "pay", steps.Resolved("event", "ev-1", '{"paid":1}'), now=100.0)
    timer = journal_items.resolve(JOB, TENANT, "pay", steps.TimedOut(StepKind.WAIT_FOR_EVENT), now=100.0)
    again = journal_items.resolve(JOB, TENANT, "pay", steps.Resolved("event", "ev-1", '{"paid":1}'), now=101.0)
    other = journal_items.resolve(JOB, TENANT, "pay", steps.Resolved("event", "ev-2", '{"paid":2}'), now=101.0)

    assert isinstance(first, Applied) and isinstance(timer, Refused)
    assert isinstance(again, AlreadyDone) and isinstance(other, Refused)
    assert journal_items.read(JOB).steps["pay"].result_json == '{"paid":1}'


# Interleavings, duplicates and faults ---------------------------------------------------------------------

STEP_IDS = ("a", "b")
WAIT = "w"
_WAIT_UNTIL = 500.0


@dataclass
class Fault:
    kind: str = "none"  # "none", "lost" (applied, its answer lost, sent again), "blip" (refused before applying)


class FaultyClient:
    """The store's client with a fault on its next UpdateItem: the journal's writes meet it."""

    def __init__(self, real: Any, fault: Fault) -> None:
        self._real = real
        self._fault = fault

    def update_item(self, **params: Any) -> Any:
        kind, self._fault.kind = self._fault.kind, "none"
        if kind == "blip":
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "UpdateItem")
        if kind == "lost":
            with contextlib.suppress(ClientError):
                self._real.update_item(**params)  # applied; its answer never arrives
        return self._real.update_item(**params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


_ATTEMPTS = st.sampled_from(("now", "zombie"))
_OPERATIONS = st.one_of(
    st.tuples(st.just("ran"), _ATTEMPTS, st.sampled_from(STEP_IDS), st.sampled_from((1, "big"))),
    st.tuples(st.just("failed"), _ATTEMPTS, st.sampled_from(STEP_IDS), st.just(None)),
    st.tuples(st.just("suspend"), _ATTEMPTS, st.just(WAIT), st.just(None)),
    st.tuples(st.just("event"), st.just(""), st.just(WAIT), st.sampled_from(("ev-1", "ev-2"))),
    st.tuples(st.just("stale"), st.just(""), st.just(WAIT), st.just(None)),
    st.tuples(st.just("timer"), st.just(""), st.just(WAIT), st.sampled_from((_WAIT_UNTIL - 1, _WAIT_UNTIL))),
    st.tuples(st.just("cancel"), st.just(""), st.just(WAIT), st.just(None)),
    st.tuples(st.just("reread"), _ATTEMPTS, st.just(""), st.just(None)),
    st.tuples(st.just("retry"), st.just(""), st.just(""), st.just(None)),
)
_HISTORIES = st.lists(st.tuples(_OPERATIONS, st.sampled_from(("none", "none", "lost", "blip"))), max_size=20)

# What the state machine decides, compared with the store: writer nonces and times are each write's own.
_SEMANTIC = ("id", "kind", "status", "n", "attempts", "run", "result_json", "error", "until", "awaits", "resolved_by")


def _semantic(record: StepRecord | None) -> tuple[Any, ...] | None:
    return None if record is None else tuple(getattr(record, name) for name in _SEMANTIC)


def _change(operation: str, argument: Any) -> steps.Change:
    match operation:
        case "ran":
            return steps.Ran(StepKind.STEP, result_json=json.dumps("x" * 5000 if argument == "big" else argument))
        case "failed":
            return steps.Failed(StepKind.STEP, "boom")
        case "suspend":
            return steps.Suspended(StepKind.WAIT_FOR_EVENT, _WAIT_UNTIL, "event", {"name": "paid"})
        case "event":
            return steps.Resolved("event", argument, json.dumps({"by": argument}))
        case "stale":
            return steps.Resolved("token:tk_other", "token", "null")
        case "timer":
            return steps.TimedOut(StepKind.WAIT_FOR_EVENT)
        case "cancel":
            return steps.Cancelled()
    raise AssertionError(operation)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=_HISTORIES)
def test_every_write_of_a_step_follows_the_state_machine_whatever_repeats_races_or_fails(aws, monkeypatch, history):
    aws["dynamodb"].delete_item(TableName=corral_settings.TABLE_NAME, Key={"pk": {"S": f"journal#{JOB}"}})
    fault = Fault()
    real = journal_items._dynamodb
    monkeypatch.setattr(journal_items, "_dynamodb", lambda single_attempt: FaultyClient(real(single_attempt), fault))
    views = {"now": journal_items.Journal(JOB, TENANT), "zombie": journal_items.Journal(JOB, TENANT)}
    model: dict[str, StepRecord] = {}  # the truth, as the state machine makes it
    recorded_once: dict[str, tuple[Any, ...]] = {}  # steps final in every run: never changed again
    run, now = 0, 100.0

    for index, ((operation, writer, step, argument), fault_kind) in enumerate(history):
        now += 1
        if operation == "reread":
            views[writer] = journal_items.read(JOB) or journal_items.Journal(JOB, TENANT)
            continue
        if operation == "retry":
            run += 1
            continue
        change = _change(operation, argument)
        at = float(argument) if operation == "timer" else now
        current = model.get(step)
        expected = steps.transition(
            current, change, step_id=step, n=len(model), run=run, writer=f"model-{index}", now=at
        )
        fault.kind = fault_kind
        try:
            if operation in ("ran", "failed", "suspend"):
                got = journal_items.record(views[writer], step, change, run=run, now=at)
            else:
                got = journal_items.resolve(JOB, TENANT, step, change, now=at)
        except ClientError:
            assert fault_kind == "blip"  # nothing written: the caller tries again later
            got = None
        fault.kind = "none"  # a fault the operation never met (it wrote nothing) is gone with it
        held = journal_items.read(JOB)
        stored = held.steps if held else {}

        if got is not None:
            if isinstance(expected, Applied):
                assert isinstance(got, Applied | AlreadyDone), (operation, got)
                model[step] = expected.record
            else:
                assert type(got) is type(expected), (operation, expected, got)
        for step_id in set(model) | set(stored):
            assert _semantic(stored.get(step_id)) == _semantic(model.get(step_id)), step_id
        for step_id, record in model.items():
            if record.status in steps.FINAL_IN_EVERY_RUN:
                recorded_once.setdefault(step_id, _semantic(record))
                assert _semantic(record) == recorded_once[step_id]  # recorded exactly once
        assert sorted(record.n for record in stored.values()) == list(range(len(stored)))
        if held is not None:
            assert held.result_bytes == sum(record.result_bytes for record in stored.values())
            for record in stored.values():
                if record.result_json is not None and record.status is not StepStatus.WAITING:
                    assert record.result_json == model[record.id].result_json  # spilled ones read back whole


def test_a_zombie_attempt_that_knows_the_journal_as_it_was_cannot_overwrite_a_recorded_result(aws):
    zombie, current = journal_items.Journal(JOB, TENANT), journal_items.Journal(JOB, TENANT)
    small_record(current, "a", "first")

    second = small_record(zombie, "a", "second")  # its view says "not recorded"; the store's truth refuses it

    assert isinstance(second, Refused) and second.reason == "it is succeeded already"
    assert json.loads(journal_items.read(JOB).steps["a"].result_json) == "first"


@pytest.mark.parametrize("kind", [StepKind.SLEEP, StepKind.WAIT_FOR_EVENT])
def test_a_timer_before_its_time_changes_nothing_and_after_it_ends_the_step(aws, kind):
    journal = journal_items.Journal(JOB, TENANT)
    journal_items.record(journal, "t", steps.Suspended(kind, 200.0, kind, {}), run=0, now=100.0)

    early = journal_items.resolve(JOB, TENANT, "t", steps.TimedOut(kind), now=199.0)
    due = journal_items.resolve(JOB, TENANT, "t", steps.TimedOut(kind), now=200.0)

    assert isinstance(early, Refused) and early.reason == "its time has not come"
    assert isinstance(due, Applied)
    assert due.record.status is (StepStatus.SUCCEEDED if kind is StepKind.SLEEP else StepStatus.TIMED_OUT)
