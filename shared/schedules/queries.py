"""Reading customers' schedules: one by name, a page of a tenant's, all of them (operators' tools), an
update previewed, and when a schedule fires next. Reading a schedule left half done by a request that is
over finishes it first (shared/schedules/lifecycle.py `finish_stale`); nothing else here writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared import cursors, settings
from shared.schedules import definitions, expressions, lifecycle
from shared.store.schedules import schedule_items
from shared.store.schedules.schedule_items import Definition, ScheduleItem, State


def get(tenant: str, name: str) -> ScheduleItem | None:
    """The schedule, if it is active or being updated (with the definition it has until the update ends).
    One left `creating` or `deleting` by a request that is over is finished here, as a delete; one left
    `updating`, as that update."""
    item = schedule_items.get(tenant, name)
    if item is not None and lifecycle.is_stale_update(item):
        lifecycle.finish_stale_update(tenant, name)
        item = schedule_items.get(tenant, name)
    if item is None or item.current_state in (State.ACTIVE, State.UPDATING):
        return item
    if lifecycle.is_stale(item):
        lifecycle.finish_stale(tenant, name)
    return None


def existing(tenant: str, name: str) -> ScheduleItem:
    """The schedule as `get` finds it; ScheduleNotFound if there is none."""
    item = get(tenant, name)
    if item is None:
        raise lifecycle.ScheduleNotFound(name)
    return item


@dataclass(frozen=True)
class SchedulePage:
    schedules: list[ScheduleItem]
    next_cursor: str | None  # None: this was the last page


# A cursor names the schedule the next page continues after: never a tenant.
_CURSORS = cursors.Codec("s1", definitions.NAME)
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


def preview(tenant: str, name: str, changes: Mapping[str, Any]) -> ScheduleItem:
    """The schedule as `update` would leave it, written nowhere: `changes` checked as an update checks them
    (InvalidRequest names a bad field), for a client to show the next firings before saving. Counts nothing
    against the rate limit; the budget and Scheduler are not asked."""
    current = get(tenant, name)
    if current is None:
        raise lifecycle.ScheduleNotFound(name)
    return schedule_items.with_definition(
        current, definitions.changed(tenant, current.definition, changes, datetime.now(UTC))
    )


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
