"""Customers' schedules: a record per schedule in the jobs table (shared/store/schedule_items.py), an EventBridge
Scheduler schedule that fires it.

The record (what the API lists and shows) is written first, conditionally, so a
name is taken once per tenant; the Scheduler schedule is then created. A
schedule left behind by a half-done earlier delete is replaced. Runs are the
jobs the firings became, found on the gsi1 index newest first.
"""

from __future__ import annotations

import hashlib
import re
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
from shared.store.schedule_items import ScheduleItem
from shared.tenants import quotas

_NAME = re.compile(rf"[A-Za-z0-9_.-]{{1,{settings.SCHEDULE_NAME_MAX_LENGTH}}}")


class ScheduleExists(Conflict):
    """A schedule of this name exists for the tenant."""


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
    """Record the schedule, taking a unit of the tenant's schedule quota with it, then create it in
    Scheduler. ScheduleExists if the name is taken; QuotaExceeded at the limit. If Scheduler refuses
    or fails, the record goes and the unit comes back: the name stays free to retry."""
    now = datetime.now(UTC)
    start, end = _check(tenant, request, now)
    spec = with_max_attempts(request.job)
    job: dict[str, Any] = {"type": spec.type, "payload": spec.payload, "max_attempts": spec.max_attempts}
    if spec.timeout_seconds is not None:
        job["timeout_seconds"] = spec.timeout_seconds
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
    )
    if not quotas.take(tenant, quotas.SCHEDULES, schedule_items.as_item(item)):
        raise ScheduleExists(request.name)
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
        except eventbridge.AlreadyExists:  # left by a delete that removed the record but not the schedule
            eventbridge.delete(name)
            create_in_scheduler()
    except Exception as error:
        quotas.give_back(tenant, quotas.SCHEDULES, schedule_items.item_key(tenant, request.name))
        if isinstance(error, eventbridge.Rejected):  # the input, not an outage: a retry would fail the same way
            raise InvalidRequest(error.parameter, f"EventBridge Scheduler rejected the {error.parameter}") from error
        raise
    return item


def get(tenant: str, name: str) -> ScheduleItem | None:
    return schedule_items.get(tenant, name)


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
    """Stop the schedule, then forget it and give its quota unit back. False if there was none.
    Its runs stay (they expire with their jobs)."""
    item = get(tenant, name)
    if item is None:
        return False
    eventbridge.delete(scheduler_name(tenant, name))
    quotas.give_back(tenant, quotas.SCHEDULES, schedule_items.item_key(tenant, name))
    return True


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
