"""Two requests about one schedule racing, interleaved at every AWS call, against moto: a create and a
delete; an update and a delete; two updates.

Each request runs on its own thread; before each of its AWS calls (DynamoDB or Scheduler) it stops
until the test lets it through, so hypothesis chooses the order of every step of the two. It may
also make one call fail: before AWS acts ("before": an outage), after AWS acted ("after": an
answer lost to a timeout), or by killing the request there ("crash": no error handling runs).

The property, once both are over: the Scheduler schedule exists exactly when the record exists and
is active, exactly when the tenant holds a unit of its schedule quota; and an active record says what
the Scheduler schedule does (its payload). Without a fault it holds at once; after a fault it holds
once the next request about that name has run past the lease (`queries.get` here), as a
client retrying or an operator's recount would.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto.core.botocore_stubber import BotocoreStubber

from shared import settings as corral_settings
from shared.errors import Conflict, NotFound
from shared.model.spec import JobSpec
from shared.schedules import definitions, lifecycle, queries
from shared.store.schedules import schedule_items
from shared.tenants import quotas, rate_limit

NAME = "nightly"
CREATE, DELETE, UPDATE, UPDATE_AGAIN = 0, 1, 2, 3


class Crash(BaseException):
    """The request's process dies at this call: no `except Exception` of its runs."""


@dataclass(frozen=True)
class Fault:
    actor: int  # CREATE, DELETE, UPDATE or UPDATE_AGAIN
    call: int  # its n-th AWS call (0-based)
    kind: str  # "before", "after" or "crash"


def _outage(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "injected"}}, operation)


@dataclass
class Interleaving:
    """Lets one waiting request's AWS call through at a time, in the order `pick` chooses."""

    pick: Callable[[list[int]], int]
    fault: Fault | None
    actors: dict[int, int] = field(default_factory=dict)  # thread id -> actor
    waiting: set[int] = field(default_factory=set)
    done: set[int] = field(default_factory=set)
    granted: int | None = None
    calls: dict[int, int] = field(default_factory=lambda: dict.fromkeys((CREATE, DELETE, UPDATE, UPDATE_AGAIN), 0))
    turn: threading.Condition = field(default_factory=threading.Condition)

    def call(self, proceed: Callable[[], Any], operation: str) -> Any:
        actor = self.actors.get(threading.get_ident())
        if actor is None:  # the rate limiter's background reports, the test's own reads
            return proceed()
        with self.turn:
            self.waiting.add(actor)
            self.turn.notify_all()
            self.turn.wait_for(lambda: self.granted == actor)
            self.granted = None
            self.waiting.discard(actor)
            number = self.calls[actor]
            self.calls[actor] += 1
        fault = self.fault
        if fault is None or (fault.actor, fault.call) != (actor, number):
            return proceed()
        if fault.kind == "crash":
            raise Crash
        if fault.kind == "before":
            raise _outage(operation)
        proceed()
        raise _outage(operation)

    def run(self, requests: dict[int, Callable[[], Any]]) -> dict[int, Any]:
        outcomes: dict[int, Any] = {}

        def body(actor: int, request: Callable[[], Any]) -> None:
            self.actors[threading.get_ident()] = actor
            try:
                outcomes[actor] = request()
            except BaseException as error:  # a Crash too: the outcome of this request
                outcomes[actor] = error
            finally:
                with self.turn:
                    self.done.add(actor)
                    self.turn.notify_all()

        threads = [threading.Thread(target=body, args=item, daemon=True) for item in requests.items()]
        for thread in threads:
            thread.start()
        with self.turn:
            while True:
                settled = self.turn.wait_for(
                    lambda: self.granted is None and len(self.waiting) + len(self.done) == len(requests), timeout=10
                )
                assert settled, f"a request stopped outside an AWS call: waiting {self.waiting}, done {self.done}"
                if not self.waiting:
                    break
                self.granted = self.pick(sorted(self.waiting))
                self.turn.notify_all()
        for thread in threads:
            thread.join(timeout=10)
        return outcomes


_current: list[Interleaving | None] = [None]


@pytest.fixture
def interleaved(scheduler_env, monkeypatch):
    """Routes every moto request through the interleaving of the example running, if any."""
    process_request = BotocoreStubber.process_request

    def gated(self: BotocoreStubber, request: Any) -> Any:
        interleaving = _current[0]
        if interleaving is None:
            return process_request(self, request)
        target = request.headers.get("X-Amz-Target") or b""  # DynamoDB's operation; Scheduler's is in the URL
        operation = (target.decode() if isinstance(target, bytes) else target) or f"{request.method} {request.url}"
        return interleaving.call(lambda: process_request(self, request), operation)

    monkeypatch.setattr(BotocoreStubber, "process_request", gated)
    # No waiting between a delete's re-reads (the interleaving decides when the create moves on).
    monkeypatch.setattr(lifecycle, "_sleep", lambda _seconds: None, raising=False)
    monkeypatch.setattr(lifecycle, "_clock", lambda: time.time() + _clock_ahead[0], raising=False)
    yield scheduler_env
    _current[0] = None
    _clock_ahead[0] = 0.0


_clock_ahead = [0.0]  # seconds the schedules' clock is ahead of time.time()


def _request() -> definitions.ScheduleRequest:
    return definitions.ScheduleRequest(name=NAME, expression="rate(1 hour)", job=JobSpec("echo"))


def _assert_the_budget_counts_what_the_record_holds(tenant: str) -> None:
    record = schedule_items.get(tenant, NAME)
    held = 0 if record is None else record.held
    assert quotas.usage(tenant)["firings_per_hour"] == held, {"counted": quotas.usage(tenant), "held": held}
    if record is not None and record.current_state is schedule_items.State.ACTIVE:
        assert held == record.definition.firings_per_hour


def _state(scheduler_env: dict[str, Any], tenant: str) -> tuple[bool, bool, int, bool]:
    """(Scheduler schedule exists, record exists and is active, units held, record exists)."""
    try:
        scheduler_env["scheduler"].get_schedule(
            Name=lifecycle.scheduler_name(tenant, NAME), GroupName=corral_settings.SCHEDULE_GROUP
        )
        scheduled = True
    except ClientError:
        scheduled = False
    record = schedule_items.get(tenant, NAME)
    active = record is not None and getattr(record, "state", None) in (None, "active")
    return scheduled, active, quotas.usage(tenant)["schedules"], record is not None


def _assert_whole_or_none(scheduler_env: dict[str, Any], tenant: str) -> None:
    scheduled, active, units, recorded = _state(scheduler_env, tenant)
    assert scheduled == active == (units == 1) == recorded, {
        "scheduled": scheduled,
        "active record": active,
        "units": units,
        "record": recorded,
    }
    assert units in (0, 1)
    if active:  # the record says what Scheduler fires
        entry = scheduler_env["scheduler"].get_schedule(
            Name=lifecycle.scheduler_name(tenant, NAME), GroupName=corral_settings.SCHEDULE_GROUP
        )
        assert json.loads(entry["Target"]["Input"])["payload"] == schedule_items.get(tenant, NAME).job["payload"]
        assert entry["ScheduleExpression"] == schedule_items.get(tenant, NAME).expression
    _assert_the_budget_counts_what_the_record_holds(tenant)


_FAULTS = st.none() | st.builds(
    Fault,
    actor=st.sampled_from([CREATE, DELETE]),
    call=st.integers(min_value=0, max_value=10),
    kind=st.sampled_from(["before", "after", "crash"]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(existed=st.booleans(), fault=_FAULTS, data=st.data())
def test_a_create_and_a_delete_racing_leave_the_schedule_its_record_and_its_unit_or_none(
    interleaved, existed, fault, data
):
    tenant = f"t{uuid.uuid4().hex[:12]}"  # each example its own tenant: its own record, unit and schedule
    rate_limit.check(tenant)  # the rate limiter's first sight of the tenant, outside the race
    if existed:
        lifecycle.create(tenant, _request())
    interleaving = Interleaving(pick=lambda waiting: data.draw(st.sampled_from(waiting)), fault=fault)
    _current[0] = interleaving

    outcomes = interleaving.run(
        {
            CREATE: lambda: lifecycle.create(tenant, _request()),
            DELETE: lambda: lifecycle.delete(tenant, NAME),
        }
    )
    _current[0] = None

    faulted = fault is not None and interleaving.calls[fault.actor] > fault.call
    for outcome in outcomes.values():  # only what the API answers: no bug surfaces as another exception
        if isinstance(outcome, BaseException) and not faulted:
            assert isinstance(outcome, Conflict | NotFound), outcome  # NotFound: a delete before any create
    if faulted:  # the next request about that name, once the failed one's lease is over, finishes its work
        _clock_ahead[0] += getattr(corral_settings, "SCHEDULE_CHANGE_LEASE_SECONDS", 60) + 1
        queries.get(tenant, NAME)
    _assert_whole_or_none(interleaved, tenant)


_UPDATES = st.none() | st.builds(
    Fault,
    actor=st.sampled_from([UPDATE, DELETE]),
    call=st.integers(min_value=0, max_value=8),
    kind=st.sampled_from(["before", "after", "crash"]),
)


def _update(tenant: str, by: int) -> Callable[[], Any]:
    """An update of the payload and the expression, so that what the record holds of the firings budget
    moves too (rate(1 hour) weighs 1, these 60 and 12)."""
    expression = "rate(1 minute)" if by == UPDATE else "rate(5 minutes)"
    return lambda: lifecycle.update(tenant, NAME, {"job": {"payload": {"by": by}}, "expression": expression})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fault=_UPDATES, against=st.sampled_from([DELETE, UPDATE_AGAIN]), data=st.data())
def test_an_update_racing_a_delete_or_an_update_leaves_the_record_saying_what_scheduler_fires(
    interleaved, fault, against, data
):
    tenant = f"t{uuid.uuid4().hex[:12]}"
    rate_limit.check(tenant)
    lifecycle.create(tenant, _request())
    if fault is not None and fault.actor == DELETE:
        fault = Fault(against, fault.call, fault.kind)
    interleaving = Interleaving(pick=lambda waiting: data.draw(st.sampled_from(waiting)), fault=fault)
    _current[0] = interleaving
    other = (lambda: lifecycle.delete(tenant, NAME)) if against == DELETE else _update(tenant, UPDATE_AGAIN)

    outcomes = interleaving.run({UPDATE: _update(tenant, UPDATE), against: other})
    _current[0] = None

    faulted = fault is not None and interleaving.calls[fault.actor] > fault.call
    for outcome in outcomes.values():
        if isinstance(outcome, BaseException) and not faulted:
            assert isinstance(outcome, Conflict | NotFound), outcome
    if faulted:
        _clock_ahead[0] += getattr(corral_settings, "SCHEDULE_CHANGE_LEASE_SECONDS", 60) + 1
        queries.get(tenant, NAME)
    _assert_whole_or_none(interleaved, tenant)
