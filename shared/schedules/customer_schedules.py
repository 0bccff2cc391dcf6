"""Customers' schedules: a record per schedule in the jobs table (shared/store/schedule_items.py), an EventBridge
Scheduler schedule that fires it.

Create and delete take turns on the record, so that a schedule, its record and its quota unit exist
together or not at all:
- create puts the record `creating` with its quota unit (conditionally: a name is taken once per
  tenant), creates the Scheduler schedule, then marks the record `active` if it still owns it;
- delete marks the record `deleting` (waiting a moment for a `creating` one to finish), deletes the
  Scheduler schedule, then removes the record with its unit if it still owns it.
Every step is conditional on the record's state and the owning request's token, so of a create and
a delete racing, one waits for the other or finds its work done. A record left `creating` or
`deleting` by a request that died or failed half way (older than SCHEDULE_CHANGE_LEASE_SECONDS) is
finished as a delete by the next create, delete or get of that name, or by an operator's recount.
tests/unit/test_schedule_races.py interleaves a create and a delete at every AWS call.

Runs are the jobs the firings became, found on the gsi1 index newest first.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from shared import cursors, settings
from shared.aws import eventbridge, queue
from shared.errors import Conflict, InvalidRequest
from shared.jobs.enqueue import check_job, with_max_attempts
from shared.model import JobMessage, JobSpec
from shared.schedules import expressions
from shared.schedules.expressions import InvalidExpression, parse, timezone
from shared.store import schedule_items
from shared.store.schedule_items import ScheduleItem, State
from shared.tenants import quotas, rate_limit

_NAME = re.compile(rf"[A-Za-z0-9_.-]{{1,{settings.SCHEDULE_NAME_MAX_LENGTH}}}")


class ScheduleExists(Conflict):
    """A schedule of this name exists for the tenant."""


class ScheduleBusy(Conflict):
    """Another request is creating or deleting the tenant's schedule of this name right now."""

    def __init__(self, name: str, state: State) -> None:
        doing = "created" if state is State.CREATING else "deleted"
        super().__init__(f"schedule {name!r} is being {doing} by another request; retry in a moment")


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


def scheduler_name(tenant: str, name: str) -> str:
    """Unique in the one schedule group across tenants; the prefix lists a tenant's schedules in the console."""
    return f"{hashlib.sha256(tenant.encode()).hexdigest()[:16]}-{name}"


def _aware(value: datetime | None) -> datetime | None:
    return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)


def _check(tenant: str, request: ScheduleRequest, now: datetime) -> tuple[datetime | None, datetime | None]:
    if not _NAME.fullmatch(request.name):
        raise InvalidRequest("name", f"use 1-{settings.SCHEDULE_NAME_MAX_LENGTH} of A-Z a-z 0-9 _ . -")
    try:
        zone = timezone(request.timezone)
    except InvalidExpression as error:
        raise InvalidRequest("timezone", str(error)) from error
    try:
        expression = parse(request.expression)
    except InvalidExpression as error:
        raise InvalidRequest("expression", str(error)) from error
    if expression.at is not None and expression.at.replace(tzinfo=zone) <= now:
        raise InvalidRequest("expression", f"{request.expression} ({request.timezone}) is in the past")
    check_job(request.job, tenant=tenant, field_prefix="job.", scheduler_input=True)
    if not 0 <= request.flexible_window_minutes <= settings.MAX_FLEXIBLE_WINDOW_MINUTES:
        raise InvalidRequest(
            "flexible_window_minutes", f"must be between 0 (off) and {settings.MAX_FLEXIBLE_WINDOW_MINUTES}"
        )
    start, end = _aware(request.start), _aware(request.end)
    if start is not None and start < now - timedelta(seconds=settings.SCHEDULE_START_GRACE_SECONDS):
        grace = settings.SCHEDULE_START_GRACE_SECONDS // 60
        raise InvalidRequest("start", f"must be no earlier than {grace} minutes ago (leave it out to start now)")
    if end is not None and end <= now:
        raise InvalidRequest("end", "must be in the future")
    if start is not None and end is not None and end <= start:
        raise InvalidRequest("end", "must be after start")
    return start, end


def create(tenant: str, request: ScheduleRequest) -> ScheduleItem:
    """Record the schedule `creating`, taking a unit of the tenant's schedule quota with it, create it in
    Scheduler, then mark the record `active`. ScheduleExists if the name is taken; ScheduleBusy while
    another request creates or deletes it; QuotaExceeded at the limit; RateLimited over the tenant's
    rate (a create counts one; nothing done). If Scheduler refuses or fails, the schedule, record and
    unit go: the name stays free to retry."""
    now = datetime.now(UTC)
    start, end = _check(tenant, request, now)
    rate_limit.check(tenant)
    spec = with_max_attempts(request.job)
    job: dict[str, Any] = {"type": spec.type, "payload": spec.payload, "max_attempts": spec.max_attempts}
    if spec.timeout_seconds is not None:
        job["timeout_seconds"] = spec.timeout_seconds
    token = uuid.uuid4().hex
    item = schedule_items.new_item(
        tenant,
        name=request.name,
        expression=request.expression.strip(),
        timezone=request.timezone,
        job=job,
        flexible_window_minutes=request.flexible_window_minutes,
        start=start,
        end=end,
        created_at=now,
        token=token,
        now=_clock(),
    )
    if not quotas.take(tenant, quotas.SCHEDULES, schedule_items.as_item(item)):
        existing = schedule_items.get(tenant, request.name)
        if existing is not None and not existing.changing_before(_stale_before(_clock())):
            if existing.current_state is State.ACTIVE:
                raise ScheduleExists(request.name)
            raise ScheduleBusy(request.name, existing.current_state)
        if existing is not None:  # left half done by a request that is over: finish it as a delete
            _finish_stale(tenant, request.name)
        item.changing_since = _clock()
        if not quotas.take(tenant, quotas.SCHEDULES, schedule_items.as_item(item)):
            raise ScheduleBusy(request.name, State.CREATING)
    firing = JobMessage.firing_template(tenant, request.name, spec)
    name = scheduler_name(tenant, request.name)

    def create_in_scheduler() -> None:
        eventbridge.create(
            name,
            item.expression,
            firing,
            timezone=request.timezone,
            start=start,
            end=end,
            flexible_window_minutes=request.flexible_window_minutes,
            message_group=queue.message_group(tenant),
        )

    try:
        try:
            create_in_scheduler()
        except eventbridge.AlreadyExists:  # left without a record (by code older than these states): replace it
            eventbridge.delete(name)
            create_in_scheduler()
    except Exception as error:
        # A failure may come after Scheduler created it (an answer lost to a timeout): delete it before the
        # record and unit go. If this fails too, the record stays `creating` and is finished after the lease.
        if not isinstance(error, eventbridge.Rejected):
            eventbridge.delete(name)
        quotas.give_back(
            tenant,
            quotas.SCHEDULES,
            schedule_items.item_key(tenant, request.name),
            only_if=schedule_items.held_by(token),
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
    return quotas.give_back(
        tenant, quotas.SCHEDULES, schedule_items.item_key(tenant, name), only_if=schedule_items.held_by(token)
    )


def get(tenant: str, name: str) -> ScheduleItem | None:
    """The schedule, if it is active. One left `creating` or `deleting` by a request that is over is
    finished here, as a delete."""
    item = schedule_items.get(tenant, name)
    if item is None or item.current_state is State.ACTIVE:
        return item
    if item.changing_before(_stale_before(_clock())):
        _finish_stale(tenant, name)
    return None


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


def delete(tenant: str, name: str) -> bool:
    """Mark the record `deleting`, stop the schedule, then forget it and give its quota unit back.
    False if there was none. RateLimited over the tenant's rate (a delete counts one; nothing done);
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
            return False
        if marked is schedule_items.Mark.MARKED:
            _remove(tenant, name, token)  # False: a later delete took it over and finishes it
            return True
    raise ScheduleBusy(name, State.CREATING)


def scheduler_names_left(tenant: str) -> list[str]:
    """Scheduler schedules of the tenant's prefix with no record (left by code older than these states)."""
    prefix = scheduler_name(tenant, "")
    recorded = {scheduler_name(tenant, item.name) for item in list_for(tenant)}
    return [found for found in eventbridge.names_with_prefix(prefix) if found not in recorded]


def repair(tenant: str) -> list[str]:
    """Finish the tenant's records left `creating` or `deleting` by requests that died, and delete its
    Scheduler schedules that have no record (operators' recount). The names of what it removed."""
    repaired = [
        item.name
        for item in list_for(tenant)
        if item.changing_before(_stale_before(_clock())) and _finish_stale(tenant, item.name)
    ]
    prefix = scheduler_name(tenant, "")
    for left in scheduler_names_left(tenant):
        if schedule_items.get(tenant, left.removeprefix(prefix)) is None:  # not recorded since it was listed
            eventbridge.delete(left)
            repaired.append(left)
    return repaired


def recent_runs(tenant: str, name: str, limit: int = settings.SCHEDULE_RUNS_SHOWN) -> list[dict[str, Any]]:
    """The jobs this schedule's firings became (once a worker has seen them), newest first."""
    runs = schedule_items.runs(tenant, name, limit)
    return [{"id": run.id, "status": str(run.status), "scheduled_for": run.scheduled_for} for run in runs]


def next_firings(item: ScheduleItem, count: int, now: datetime | None = None) -> list[str] | None:
    """When it fires next (ISO 8601, UTC), computed from its expression; None when that cannot be forecast."""
    firings = expressions.next_firings(
        item.expression,
        item.timezone,
        after=now or datetime.now(UTC),
        anchor=item.created_at,
        count=count,
        start=item.start,
        end=item.end,
    )
    return None if firings is None else [when.isoformat(timespec="seconds") for when in firings]
