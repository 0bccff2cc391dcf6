"""A customer's schedule from create to delete: a record per schedule in the jobs table
(shared/store/schedules/schedule_items.py), and an EventBridge Scheduler schedule that fires it.

Create, update and delete take turns on the record, so that a schedule, its record and its quota unit
exist together or not at all, and the record says what the Scheduler schedule does:
- create puts the record `creating` with its quota unit (conditionally: a name is taken once per
  tenant), creates the Scheduler schedule, then marks the record `active` if it still owns it;
- update (and pause, resume) marks an active record `updating` with the definition it applies,
  replaces the Scheduler schedule's definition in one UpdateSchedule, then writes that definition on
  the record and marks it `active` again if it still owns it;
- delete marks the record `deleting` (waiting a moment for a `creating` one to finish; an `updating`
  one it takes over at once), deletes the Scheduler schedule, then removes the record with its unit
  if it still owns it.
Every step is conditional on the record's state and the owning request's token, so of two requests
racing, one waits for the other, finds its work done, or answers 409. A record left `creating` or
`deleting` by a request that died or failed half way (older than SCHEDULE_CHANGE_LEASE_SECONDS) is
finished as a delete by the next create, delete or get of that name, or by an operator's recount; one
left `updating` is finished as that update (its pending definition applied again), since the
Scheduler schedule may hold it already. tests/unit/schedules/test_races.py interleaves two requests at
every AWS call.

What a definition may hold is shared/schedules/definitions.py's; reading schedules (and finishing, with
`finish_stale`, what a request that is over left) is shared/schedules/queries.py's; runs (the jobs the
firings, triggers and backfills became) are shared/schedules/runs.py's.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from shared import settings
from shared.aws import eventbridge, queue
from shared.errors import Conflict, InvalidRequest, NotFound
from shared.model.message import JobMessage
from shared.model.states import Overlap
from shared.schedules import definitions
from shared.schedules.definitions import ScheduleRequest
from shared.store.schedules import schedule_items
from shared.store.schedules.schedule_items import Definition, ScheduleItem, State
from shared.tenants import quotas, rate_limit


class ScheduleExists(Conflict):
    """A schedule of this name exists for the tenant."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a schedule named {name!r} exists; delete it first")


class ScheduleBusy(Conflict):
    """Another request is creating, updating or deleting the tenant's schedule of this name right now."""

    def __init__(self, name: str, state: State) -> None:
        doing = {State.CREATING: "created", State.UPDATING: "updated"}.get(state, "deleted")
        super().__init__(f"schedule {name!r} is being {doing} by another request; retry in a moment")


class ScheduleNotFound(NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"no schedule {name!r}")


# Patched by tests (a clock they move past the lease, no waiting between re-reads).
_clock = time.time
_sleep = time.sleep


def _stale_before(now: float) -> float:
    return now - settings.SCHEDULE_CHANGE_LEASE_SECONDS


def scheduler_name(tenant: str, name: str) -> str:
    """Unique in the one schedule group across tenants; the prefix lists a tenant's schedules in the console."""
    return f"{hashlib.sha256(tenant.encode()).hexdigest()[:16]}-{name}"


def _in_scheduler(tenant: str, name: str, definition: Definition) -> eventbridge.Definition:
    """The Scheduler schedule that does what `definition` says."""
    spec, flow = definitions.spec_of(definition.job)
    start = definition.start
    if start is not None and start < datetime.now(UTC) - timedelta(seconds=settings.SCHEDULE_START_GRACE_SECONDS):
        # A start long past bounds nothing any more, and Scheduler refuses a StartDate over 5 minutes old
        # (an update of a schedule that started last week): the record keeps it, Scheduler does without.
        start = None
    return eventbridge.Definition(
        expression=definition.expression,
        input_json=JobMessage.firing_template(tenant, name, spec, Overlap(definition.overlap), flow),
        timezone=definition.timezone,
        start=start,
        end=definition.end,
        flexible_window_minutes=definition.flexible_window_minutes,
        enabled=not definition.paused,
        description=definition.description,
        message_group=queue.message_group(tenant),
        priority=flow.level,  # its firings go straight to their lane's queue
    )


def create(tenant: str, request: ScheduleRequest) -> ScheduleItem:
    """Record the schedule `creating`, taking a unit of the tenant's schedule quota and its weight in the
    firings budget with it, create it in Scheduler, then mark the record `active`. ScheduleExists if the
    name is taken; ScheduleBusy while another request creates or deletes it; QuotaExceeded at either
    limit; RateLimited over the tenant's
    rate (a create counts one; nothing done). If Scheduler refuses or fails, the schedule, record and
    unit go: the name stays free to retry."""
    now = datetime.now(UTC)
    definition = definitions.definition(tenant, request, now)
    rate_limit.check(tenant)
    token = uuid.uuid4().hex
    item = schedule_items.new_item(
        tenant, name=request.name, definition=definition, created_at=now, token=token, now=_clock()
    )
    holds = _held_by(item)
    if not quotas.take_units(tenant, holds, schedule_items.as_item(item)):
        existing = schedule_items.get(tenant, request.name)
        if existing is not None and not existing.changing_before(_stale_before(_clock())):
            if existing.current_state in (State.ACTIVE, State.UPDATING):
                raise ScheduleExists(request.name)
            raise ScheduleBusy(request.name, existing.current_state)
        if existing is not None:  # left half done by a request that is over: finish it as a delete
            finish_stale(tenant, request.name)
        item.changing_since = _clock()
        if not quotas.take_units(tenant, holds, schedule_items.as_item(item)):
            raise ScheduleBusy(request.name, State.CREATING)
    name = scheduler_name(tenant, request.name)
    in_scheduler = _in_scheduler(tenant, request.name, definition)
    try:
        try:
            eventbridge.create_schedule(name, in_scheduler)
        except eventbridge.AlreadyExists:  # left without a record (by code older than these states): replace it
            eventbridge.delete(name)
            eventbridge.create_schedule(name, in_scheduler)
    except Exception as error:
        # A failure may come after Scheduler created it (an answer lost to a timeout): delete it before the
        # record and unit go. If this fails too, the record stays `creating` and is finished after the lease.
        if not isinstance(error, eventbridge.Rejected):
            eventbridge.delete(name)
        quotas.give_back_units(
            tenant, holds, schedule_items.item_key(tenant, request.name), only_if=schedule_items.held_by(token)
        )
        if isinstance(error, eventbridge.Rejected):  # the input, not an outage: a retry would fail the same way
            raise InvalidRequest(error.parameter, f"EventBridge Scheduler rejected the {error.parameter}") from error
        raise
    if not schedule_items.mark_active(tenant, request.name, token):
        # Taken over as left by a request that is over (this one outlived the lease): its schedule must go.
        eventbridge.delete(name)
        raise ScheduleBusy(request.name, State.DELETING)
    item.state, item.token, item.changing_since = str(State.ACTIVE), None, None
    return item


def delete(tenant: str, name: str) -> None:
    """Mark the record `deleting`, stop the schedule, then forget it and give its quota unit back.
    ScheduleNotFound if there was none. RateLimited over the tenant's rate (a delete counts one; nothing done);
    ScheduleBusy if a create of it is still under way after a short wait. Its runs stay (they expire
    with their jobs)."""
    rate_limit.check(tenant)
    token = uuid.uuid4().hex
    for wait in range(settings.SCHEDULE_DELETE_WAITS + 1):
        if wait:
            _sleep(settings.SCHEDULE_DELETE_WAIT_SECONDS)
        now = _clock()
        marked = schedule_items.mark_deleting(tenant, name, token, now, stale_before=_stale_before(now))
        if marked is schedule_items.Mark.GONE:
            raise ScheduleNotFound(name)
        if marked is schedule_items.Mark.MARKED:
            _remove(tenant, name, token)  # False: a later delete took it over and finishes it
            return
    raise ScheduleBusy(name, State.CREATING)


def _remove(tenant: str, name: str, token: str) -> bool:
    """Delete the Scheduler schedule, then the record `token` owns with its unit (False if it no longer owns it).

    In this order, so that a request dying in between leaves a record that says `deleting`, never a
    schedule without one."""
    eventbridge.delete(scheduler_name(tenant, name))
    record = schedule_items.get(tenant, name)  # what it holds of the firings budget: fixed while it is `deleting`
    return quotas.give_back_units(
        tenant,
        _held_by(record),
        schedule_items.item_key(tenant, name),
        only_if=schedule_items.held_by(token),
    )


def _held_by(record: ScheduleItem | None) -> dict[quotas.Quota, int]:
    """What a schedule's record holds: one schedule, and its weight in the firings budget."""
    return {quotas.SCHEDULES: 1, quotas.FIRINGS: record.held if record is not None else 0}


# Updates ----------------------------------------------------------------------------------------------


def update(tenant: str, name: str, changes: Mapping[str, Any]) -> ScheduleItem:
    """Change what the schedule does (the fields of `changes`, see `definitions.changed`), in one UpdateSchedule; the
    schedule as it is then. ScheduleNotFound, ScheduleBusy while another request changes it, InvalidRequest
    (nothing changed), RateLimited (an update counts one). Its name, quota unit and runs stay."""
    now = datetime.now(UTC)
    return _change(tenant, name, lambda current: definitions.changed(tenant, current, changes, now))


def pause(tenant: str, name: str, note: str | None = None) -> ScheduleItem:
    """Stop the schedule firing (Scheduler's State=DISABLED) until it is resumed; `note` says why. Pausing a
    paused schedule changes nothing (its first pause's time and note stay)."""
    definitions.check_text("note", note)
    now = datetime.now(UTC)
    return _change(
        tenant, name, lambda current: None if current.paused else current.changed(paused_at=now, pause_note=note)
    )


def resume(tenant: str, name: str) -> ScheduleItem:
    """Let a paused schedule fire again; resuming an enabled schedule changes nothing."""
    return _change(
        tenant, name, lambda current: current.changed(paused_at=None, pause_note=None) if current.paused else None
    )


def _change(tenant: str, name: str, decide: Callable[[Definition], Definition | None]) -> ScheduleItem:
    """Apply what `decide` makes of the schedule's definition (None: nothing to change), owning the record
    `updating` meanwhile: mark it, UpdateSchedule, then write the definition and mark it `active`.

    If Scheduler refuses the definition, the record is left as it was (InvalidRequest). If anything else
    fails, the record stays `updating` with the definition pending, and the next request about that name
    after the lease applies it (`finish_stale_update`): Scheduler may have taken it already."""
    current = _changeable(tenant, name)
    definition = decide(current.definition)
    rate_limit.check(tenant)
    if definition is None or definition == current.definition:
        return current
    token = uuid.uuid4().hex
    # While it is applied, the record holds the larger of its weights in the firings budget: a firing of
    # either definition is within the budget, and an update past the budget changes nothing (QuotaExceeded).
    marking = schedule_items.marking_updating(
        token,
        _clock(),
        definition,
        held=current.held,
        holding=max(current.held, definition.firings_per_hour),
    )
    if _write(tenant, name, marking, held=current.held) is None:
        _changeable(tenant, name)  # raises why: gone, or another request owns it now
        raise ScheduleBusy(name, State.UPDATING)
    return _apply(tenant, name, token, current.definition, definition, held=marking.firings_held)


def _write(tenant: str, name: str, change: schedule_items.Change, *, held: int) -> ScheduleItem | None:
    """Apply `change` to a record holding `held` of the firings budget: alone, or in one transaction with the
    tenant's counter when what it holds changes. None if its condition failed."""
    moved = change.firings_held - held
    if moved == 0:
        return schedule_items.apply(tenant, name, change)
    if not quotas.move_units(tenant, {quotas.FIRINGS: moved}, schedule_items.as_update(tenant, name, change)):
        return None
    return schedule_items.get(tenant, name)


def _apply(
    tenant: str, name: str, token: str, current: Definition, definition: Definition, *, held: int
) -> ScheduleItem:
    """UpdateSchedule with `definition`, then make it the record's: the request `token` owns it `updating`,
    holding `held` of the firings budget; `current` is the definition it replaces."""
    try:
        eventbridge.update(scheduler_name(tenant, name), _in_scheduler(tenant, name, definition))
    except eventbridge.Rejected as error:  # the input, not an outage: the schedule is as it was
        _write(tenant, name, schedule_items.abandoning_update(token, current), held=held)
        raise InvalidRequest(error.parameter, f"EventBridge Scheduler rejected the {error.parameter}") from error
    except eventbridge.Gone as error:  # a delete took the record over and removed the schedule
        raise ScheduleBusy(name, State.DELETING) from error
    updated = _write(tenant, name, schedule_items.finishing_update(token, definition, datetime.now(UTC)), held=held)
    if updated is None:  # a delete took the record over after Scheduler took the definition
        raise ScheduleBusy(name, State.DELETING)
    return updated


def _changeable(tenant: str, name: str) -> ScheduleItem:
    """The schedule's record, if it is active (one left `updating` by a request that is over is finished
    first); else ScheduleNotFound or ScheduleBusy."""
    item = schedule_items.get(tenant, name)
    if item is not None and is_stale_update(item):
        finish_stale_update(tenant, name)
        item = schedule_items.get(tenant, name)
    if item is None:
        raise ScheduleNotFound(name)
    if item.current_state is State.ACTIVE:
        return item
    if is_stale(item):
        finish_stale(tenant, name)
        raise ScheduleNotFound(name)
    raise ScheduleBusy(name, item.current_state)


# What a request that is over left ------------------------------------------------------------------


def is_stale(record: ScheduleItem) -> bool:
    """Left `creating` or `deleting` by a request that is over (older than the lease): `finish_stale` it."""
    return record.changing_before(_stale_before(_clock()))


def is_stale_update(record: ScheduleItem) -> bool:
    """Left `updating` by a request that is over (older than the lease): `finish_stale_update` it."""
    return record.updating_before(_stale_before(_clock()))


def finish_stale_update(tenant: str, name: str) -> bool:
    """Finish an update left `updating` by a request that is over, applying its pending definition again
    (Scheduler may hold it already: applying it twice is harmless). False if it is not such a record."""
    token = uuid.uuid4().hex
    now = _clock()
    record = schedule_items.take_over_stale_update(tenant, name, token, now, stale_before=_stale_before(now))
    if record is None:
        return False
    pending = record.pending_definition
    if pending is None:
        return (
            _write(tenant, name, schedule_items.abandoning_update(token, record.definition), held=record.held)
            is not None
        )
    try:
        _apply(tenant, name, token, record.definition, pending, held=record.held)
    except (InvalidRequest, ScheduleBusy):  # refused: the record is left as it was; or deleted meanwhile
        return False
    return True


def finish_stale(tenant: str, name: str) -> bool:
    """Finish, as a delete, a record left `creating` or `deleting` by a request that is over; False if
    it is not such a record (any more)."""
    token = uuid.uuid4().hex
    now = _clock()
    if not schedule_items.take_over_stale(tenant, name, token, now, stale_before=_stale_before(now)):
        return False
    return _remove(tenant, name, token)
