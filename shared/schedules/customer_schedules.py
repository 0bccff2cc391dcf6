"""Customers' schedules: a record per schedule in the jobs table (shared/store/schedule_items.py), an EventBridge
Scheduler schedule that fires it.

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
Scheduler schedule may hold it already. tests/unit/test_schedule_races.py interleaves two requests at
every AWS call.

Runs (the jobs the firings, triggers and backfills became) are shared/schedules/schedule_runs.py's.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from shared import cursors, settings
from shared.aws import eventbridge, queue
from shared.errors import Conflict, InvalidRequest, NotFound
from shared.jobs.enqueue import check_job, with_max_attempts
from shared.model import JobMessage, JobSpec, Overlap
from shared.schedules import expressions
from shared.schedules.expressions import InvalidExpression, parse, timezone
from shared.store import schedule_items
from shared.store.schedule_items import Definition, ScheduleItem, State
from shared.tenants import quotas, rate_limit

_NAME = re.compile(rf"[A-Za-z0-9_.-]{{1,{settings.SCHEDULE_NAME_MAX_LENGTH}}}")


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


@dataclass(frozen=True)
class ScheduleRequest:
    name: str
    expression: str
    job: JobSpec  # what each firing runs; a max_attempts of None: the job type's default
    timezone: str = "UTC"
    flexible_window_minutes: int = 0
    start: datetime | None = None
    end: datetime | None = None
    overlap: str = Overlap.ALLOW
    description: str | None = None


def scheduler_name(tenant: str, name: str) -> str:
    """Unique in the one schedule group across tenants; the prefix lists a tenant's schedules in the console."""
    return f"{hashlib.sha256(tenant.encode()).hexdigest()[:16]}-{name}"


def _aware(value: datetime | None) -> datetime | None:
    return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)


def _check_expression(expression_text: str, zone_name: str, now: datetime) -> None:
    try:
        zone = timezone(zone_name)
    except InvalidExpression as error:
        raise InvalidRequest("timezone", str(error)) from error
    try:
        expression = parse(expression_text)
    except InvalidExpression as error:
        raise InvalidRequest("expression", str(error)) from error
    if expression.at is not None and expression.at.replace(tzinfo=zone) <= now:
        raise InvalidRequest("expression", f"{expression_text} ({zone_name}) is in the past")


def _job_of(tenant: str, spec: JobSpec) -> dict[str, Any]:
    """The record's job: checked as any job a schedule fires, its max_attempts decided."""
    check_job(spec, tenant=tenant, field_prefix="job.", scheduler_input=True)
    spec = with_max_attempts(spec)
    job: dict[str, Any] = {"type": spec.type, "payload": spec.payload, "max_attempts": spec.max_attempts}
    if spec.timeout_seconds is not None:
        job["timeout_seconds"] = spec.timeout_seconds
    return job


def _check_window(minutes: int) -> None:
    if not 0 <= minutes <= settings.MAX_FLEXIBLE_WINDOW_MINUTES:
        raise InvalidRequest(
            "flexible_window_minutes", f"must be between 0 (off) and {settings.MAX_FLEXIBLE_WINDOW_MINUTES}"
        )


def _check_start(start: datetime, now: datetime) -> None:
    if start < now - timedelta(seconds=settings.SCHEDULE_START_GRACE_SECONDS):
        grace = settings.SCHEDULE_START_GRACE_SECONDS // 60
        raise InvalidRequest("start", f"must be no earlier than {grace} minutes ago (leave it out to start now)")


def _check_end(end: datetime, now: datetime) -> None:
    if end <= now:
        raise InvalidRequest("end", "must be in the future")


def _check_bounds(start: datetime | None, end: datetime | None, field: str = "end") -> None:
    if start is not None and end is not None and end <= start:
        raise InvalidRequest(field, "must be after start" if field == "end" else "must be before end")


def _check_overlap(overlap: str) -> None:
    if overlap not in tuple(Overlap):
        raise InvalidRequest("overlap", f"must be one of {', '.join(Overlap)}")


def _check_text(field: str, text: str | None) -> None:
    if text is not None and len(text) > settings.SCHEDULE_TEXT_MAX_LENGTH:
        raise InvalidRequest(field, f"must be at most {settings.SCHEDULE_TEXT_MAX_LENGTH} characters")


def _definition(tenant: str, request: ScheduleRequest, now: datetime) -> Definition:
    """The definition a create writes, every field checked (InvalidRequest names the first wrong one)."""
    if not _NAME.fullmatch(request.name):
        raise InvalidRequest("name", f"use 1-{settings.SCHEDULE_NAME_MAX_LENGTH} of A-Z a-z 0-9 _ . -")
    _check_expression(request.expression, request.timezone, now)
    job = _job_of(tenant, request.job)
    _check_window(request.flexible_window_minutes)
    start, end = _aware(request.start), _aware(request.end)
    if start is not None:
        _check_start(start, now)
    if end is not None:
        _check_end(end, now)
    _check_bounds(start, end)
    _check_overlap(request.overlap)
    _check_text("description", request.description)
    return Definition(
        expression=request.expression.strip(),
        timezone=request.timezone,
        job=job,
        flexible_window_minutes=request.flexible_window_minutes,
        start=start,
        end=end,
        overlap=Overlap(request.overlap),
        description=request.description,
        firings_per_hour=expressions.firings_per_hour(request.expression),
    )


def _in_scheduler(tenant: str, name: str, definition: Definition) -> eventbridge.Definition:
    """The Scheduler schedule that does what `definition` says."""
    spec = JobSpec(**definition.job)
    start = definition.start
    if start is not None and start < datetime.now(UTC) - timedelta(seconds=settings.SCHEDULE_START_GRACE_SECONDS):
        # A start long past bounds nothing any more, and Scheduler refuses a StartDate over 5 minutes old
        # (an update of a schedule that started last week): the record keeps it, Scheduler does without.
        start = None
    return eventbridge.Definition(
        expression=definition.expression,
        input_json=JobMessage.firing_template(tenant, name, spec, Overlap(definition.overlap)),
        timezone=definition.timezone,
        start=start,
        end=definition.end,
        flexible_window_minutes=definition.flexible_window_minutes,
        enabled=not definition.paused,
        description=definition.description,
        message_group=queue.message_group(tenant),
    )


def create(tenant: str, request: ScheduleRequest) -> ScheduleItem:
    """Record the schedule `creating`, taking a unit of the tenant's schedule quota and its weight in the
    firings budget with it, create it in Scheduler, then mark the record `active`. ScheduleExists if the
    name is taken; ScheduleBusy while another request creates or deletes it; QuotaExceeded at either
    limit; RateLimited over the tenant's
    rate (a create counts one; nothing done). If Scheduler refuses or fails, the schedule, record and
    unit go: the name stays free to retry."""
    now = datetime.now(UTC)
    definition = _definition(tenant, request, now)
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
            _finish_stale(tenant, request.name)
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


# Updates ---------------------------------------------------------------------------------------------

CHANGEABLE = frozenset(
    {"expression", "timezone", "job", "flexible_window_minutes", "start", "end", "overlap", "description"}
)
_JOB_FIELDS = frozenset({"type", "payload", "max_attempts", "timeout_seconds"})


def _changed(tenant: str, current: Definition, changes: Mapping[str, Any], now: datetime) -> Definition:
    """`current` with `changes` applied (a field given as None is cleared: start, end, description, a job's
    timeout_seconds), each change checked; InvalidRequest names the first wrong field, changing nothing.

    Only what changes is checked against the clock: a schedule whose start has passed may still change
    its payload, and an at() that fired may still change its description."""
    unknown = set(changes) - CHANGEABLE
    if unknown:
        raise InvalidRequest(sorted(unknown)[0], f"cannot be changed; changeable: {', '.join(sorted(CHANGEABLE))}")
    expression = changes.get("expression", current.expression)
    zone = changes.get("timezone", current.timezone)
    if expression is None or zone is None:
        raise InvalidRequest("expression" if expression is None else "timezone", "cannot be cleared")
    if "expression" in changes or "timezone" in changes:
        _check_expression(expression, zone, now)
    job = current.job
    if "job" in changes:
        given = changes["job"] or {}
        if set(given) - _JOB_FIELDS:
            raise InvalidRequest(f"job.{sorted(set(given) - _JOB_FIELDS)[0]}", "is not a field of a job")
        merged = {**current.job, **given}
        if not merged.get("type"):
            raise InvalidRequest("job.type", "cannot be cleared")
        job = _job_of(tenant, JobSpec(**{name: merged.get(name) for name in _JOB_FIELDS}))
    window = changes.get("flexible_window_minutes", current.flexible_window_minutes)
    if window is None:
        window = 0
    _check_window(window)
    start = _aware(changes["start"]) if "start" in changes else current.start
    end = _aware(changes["end"]) if "end" in changes else current.end
    if "start" in changes and start is not None:
        _check_start(start, now)
    if "end" in changes and end is not None:
        _check_end(end, now)
    _check_bounds(start, end, "end" if "end" in changes else "start")
    overlap = changes.get("overlap", current.overlap) or Overlap.ALLOW
    _check_overlap(overlap)
    description = changes.get("description", current.description)
    _check_text("description", description)
    return current.changed(
        expression=expression.strip(),
        timezone=zone,
        job=job,
        flexible_window_minutes=window,
        start=start,
        end=end,
        overlap=Overlap(overlap),
        description=description,
        firings_per_hour=expressions.firings_per_hour(expression),
    )


def update(tenant: str, name: str, changes: Mapping[str, Any]) -> ScheduleItem:
    """Change what the schedule does (the fields of `changes`, see `_changed`), in one UpdateSchedule; the
    schedule as it is then. ScheduleNotFound, ScheduleBusy while another request changes it, InvalidRequest
    (nothing changed), RateLimited (an update counts one). Its name, quota unit and runs stay."""
    now = datetime.now(UTC)
    return _change(tenant, name, lambda current: _changed(tenant, current, changes, now))


def preview(tenant: str, name: str, changes: Mapping[str, Any]) -> ScheduleItem:
    """The schedule as `update` would leave it, written nowhere: `changes` checked as an update checks them
    (InvalidRequest names a bad field), for a client to show the next firings before saving. Counts nothing
    against the rate limit; the budget and Scheduler are not asked."""
    current = get(tenant, name)
    if current is None:
        raise ScheduleNotFound(name)
    return schedule_items.with_definition(current, _changed(tenant, current.definition, changes, datetime.now(UTC)))


def pause(tenant: str, name: str, note: str | None = None) -> ScheduleItem:
    """Stop the schedule firing (Scheduler's State=DISABLED) until it is resumed; `note` says why. Pausing a
    paused schedule changes nothing (its first pause's time and note stay)."""
    _check_text("note", note)
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
    after the lease applies it (`_finish_stale_update`): Scheduler may have taken it already."""
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
    if item is not None and item.updating_before(_stale_before(_clock())):
        _finish_stale_update(tenant, name)
        item = schedule_items.get(tenant, name)
    if item is None:
        raise ScheduleNotFound(name)
    if item.current_state is State.ACTIVE:
        return item
    if item.changing_before(_stale_before(_clock())):
        _finish_stale(tenant, name)
        raise ScheduleNotFound(name)
    raise ScheduleBusy(name, item.current_state)


def _finish_stale_update(tenant: str, name: str) -> bool:
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


def _finish_stale(tenant: str, name: str) -> bool:
    """Finish, as a delete, a record left `creating` or `deleting` by a request that is over; False if
    it is not such a record (any more)."""
    token = uuid.uuid4().hex
    now = _clock()
    if not schedule_items.take_over_stale(tenant, name, token, now, stale_before=_stale_before(now)):
        return False
    return _remove(tenant, name, token)


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


def get(tenant: str, name: str) -> ScheduleItem | None:
    """The schedule, if it is active or being updated (with the definition it has until the update ends).
    One left `creating` or `deleting` by a request that is over is finished here, as a delete; one left
    `updating`, as that update."""
    item = schedule_items.get(tenant, name)
    if item is not None and item.updating_before(_stale_before(_clock())):
        _finish_stale_update(tenant, name)
        item = schedule_items.get(tenant, name)
    if item is None or item.current_state in (State.ACTIVE, State.UPDATING):
        return item
    if item.changing_before(_stale_before(_clock())):
        _finish_stale(tenant, name)
    return None


def existing(tenant: str, name: str) -> ScheduleItem:
    """The schedule as `get` finds it; ScheduleNotFound if there is none."""
    item = get(tenant, name)
    if item is None:
        raise ScheduleNotFound(name)
    return item


@dataclass(frozen=True)
class SchedulePage:
    schedules: list[ScheduleItem]
    next_cursor: str | None  # None: this was the last page


# A cursor names the schedule the next page continues after: never a tenant.
_CURSORS = cursors.Codec("s1", _NAME)
encode_cursor = _CURSORS.encode
decode_cursor = _CURSORS.decode


def list_page(tenant: str, limit: int = settings.LIST_DEFAULT_LIMIT, cursor: str | None = None) -> SchedulePage:
    """Up to `limit` of the tenant's schedules by name, after the cursor's; next_cursor if more may follow."""
    items, more_in_index = schedule_items.page(tenant, limit, decode_cursor(cursor) if cursor is not None else None)
    more = more_in_index and len(items) == limit
    return SchedulePage(items, encode_cursor(items[-1].name) if more and items else None)


def list_for(tenant: str) -> list[ScheduleItem]:
    """All of the tenant's schedules (operators' tools; the API pages them)."""
    return schedule_items.list_all(tenant)


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


def scheduler_names_left(tenant: str) -> list[str]:
    """Scheduler schedules of the tenant's prefix with no record (left by code older than these states)."""
    prefix = scheduler_name(tenant, "")
    recorded = {scheduler_name(tenant, item.name) for item in list_for(tenant)}
    return [found for found in eventbridge.names_with_prefix(prefix) if found not in recorded]


def repair(tenant: str) -> list[str]:
    """Finish the tenant's records left `creating`, `updating` or `deleting` by requests that died, and delete
    its Scheduler schedules that have no record (operators' recount). The names of what it removed or updated."""
    repaired = [
        item.name
        for item in list_for(tenant)
        if (item.changing_before(_stale_before(_clock())) and _finish_stale(tenant, item.name))
        or (item.updating_before(_stale_before(_clock())) and _finish_stale_update(tenant, item.name))
    ]
    prefix = scheduler_name(tenant, "")
    for left in scheduler_names_left(tenant):
        if schedule_items.get(tenant, left.removeprefix(prefix)) is None:  # not recorded since it was listed
            eventbridge.delete(left)
            repaired.append(left)
    return repaired


def next_firings(item: ScheduleItem, count: int, now: datetime | None = None) -> list[str] | None:
    """When it fires next (ISO 8601, UTC), computed from its expression; None when that cannot be forecast.
    A paused schedule fires never: []."""
    if item.paused_at is not None:
        return []
    return forecast(item.definition, item.created_at, count, now)


def forecast(definition: Definition, created_at: datetime, count: int, now: datetime | None = None) -> list[str] | None:
    """The next `count` firings of `definition` (ISO 8601, UTC) as if it were not paused; None when they
    cannot be forecast (a `W` in a cron)."""
    firings = expressions.next_firings(
        definition.expression,
        definition.timezone,
        after=now or datetime.now(UTC),
        anchor=created_at,
        count=count,
        start=definition.start,
        end=definition.end,
    )
    return None if firings is None else [when.isoformat(timespec="seconds") for when in firings]
