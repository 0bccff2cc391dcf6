"""Customer schedule records (`schedule#<tenant>#<name>`), and the runs their firings became.

A record is listed on gsi1 under `schedules#<tenant>`, sorted by name. It is written in one
transaction with a unit of the tenant's schedule quota (shared/store/tenants/counters.py `take`), so this
module builds it (`new_item`) and `take` puts it.

A record's `state` says which request owns it: `creating` (a create is making its Scheduler
schedule), `active`, `updating` (an update, a pause or a resume is changing its Scheduler schedule;
`pending` holds the definition it is applying), or `deleting` (a delete is removing it). `creating`,
`updating` and `deleting` carry the owning request's `token` and `changing_since`; every change of
state is a conditional write on them, so two requests never act on one record at once
(shared/schedules/lifecycle.py, docs/decisions/schedules.md). A record written before
states existed has none: it is active.

What a schedule does (its expression, job, bounds, overlap policy, pause...) is its `Definition`: what
a create writes and an update replaces, field for field.

A pynamodb Model: schedules are read and written only on an operator's or a customer's schedule
request, never on an enqueue or a delivery, and the Model spells their typed attributes (times,
the job as JSON) once (docs/decisions/storage-idioms.md). A schedule's runs are job records, read
with the low-level client like every job item (shared/store/schedules/schedule_runs.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from enum import Enum, StrEnum
from typing import Any

from pynamodb.attributes import JSONAttribute, NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from shared import environment
from shared.model.states import Overlap
from shared.store import keys, table


class State(StrEnum):
    CREATING = "creating"
    ACTIVE = "active"
    UPDATING = "updating"
    DELETING = "deleting"


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None


def _parse_iso(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


_TIMES = ("start", "end", "paused_at")


@dataclass(frozen=True)
class Definition:
    """What a schedule does: every field of its record an update may change. Each maps onto its Scheduler
    schedule (overlap travels in the target's Input, a pause is State=DISABLED), except `firings_per_hour`."""

    expression: str
    timezone: str
    job: dict[str, Any]  # type, payload, max_attempts, timeout_seconds (only when set)
    flexible_window_minutes: int = 0
    start: datetime | None = None
    end: datetime | None = None
    overlap: str = Overlap.ALLOW
    description: str | None = None
    paused_at: datetime | None = None  # set: paused (Scheduler's State=DISABLED) since then
    pause_note: str | None = None  # why, as given at pause
    # The most firings it makes in any hour (its expression's: expressions.firings_per_hour): its weight in the
    # tenant's firings budget.
    firings_per_hour: int = 0

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    def changed(self, **changes: Any) -> Definition:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """As JSON (the `pending` attribute of a record being updated)."""
        return asdict(self) | {name: _iso(getattr(self, name)) for name in _TIMES}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Definition:
        known = {field.name for field in fields(cls)}
        values = {name: value for name, value in data.items() if name in known}
        return cls(**values | {name: _parse_iso(values.get(name)) for name in _TIMES})


class ByTenant(GlobalSecondaryIndex["ScheduleItem"]):
    class Meta:
        index_name = "gsi1"
        projection = AllProjection()

    gsi1pk = UnicodeAttribute(hash_key=True)  # keys.schedules_partition(tenant)
    gsi1sk = UnicodeAttribute(range_key=True)  # the schedule's name


class ScheduleItem(Model):
    class Meta:
        table_name = environment.current().table  # the stack's table, as for every other item

    pk = UnicodeAttribute(hash_key=True)  # keys.schedule_key(tenant, name)
    gsi1pk = UnicodeAttribute()
    gsi1sk = UnicodeAttribute()
    tenant = UnicodeAttribute()
    name = UnicodeAttribute()
    expression = UnicodeAttribute()
    timezone = UnicodeAttribute()
    job = JSONAttribute()
    flexible_window_minutes = NumberAttribute(default=0)
    start = UTCDateTimeAttribute(null=True)
    end = UTCDateTimeAttribute(null=True)
    overlap = UnicodeAttribute(null=True)  # Overlap; none: allow (a record older than overlap)
    description = UnicodeAttribute(null=True)
    paused_at = UTCDateTimeAttribute(null=True)
    pause_note = UnicodeAttribute(null=True)
    firings_per_hour = NumberAttribute(null=True)  # Definition.firings_per_hour; none: 0 (a record older than it)
    # What the record holds of the tenant's firings budget (counters `firings_per_hour`): its definition's
    # firings_per_hour, or while `updating`, the larger of its own and the pending one's. Only a write that
    # moves the counter by the same amount, in one transaction, changes it.
    firings_held = NumberAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute(null=True)
    state = UnicodeAttribute(null=True)  # State; none: active (a record older than states)
    token = UnicodeAttribute(null=True)  # the request that set `creating`, `updating` or `deleting`
    changing_since = NumberAttribute(null=True)  # epoch seconds it was set at
    pending = JSONAttribute(null=True)  # `updating`: the Definition being applied (Definition.to_json)
    by_tenant = ByTenant()

    @property
    def current_state(self) -> State:
        return State(self.state) if self.state else State.ACTIVE

    def changing_before(self, moment: float) -> bool:
        """Whether it is `creating` or `deleting`, set before `moment` (its request is over)."""
        return self.current_state in (State.CREATING, State.DELETING) and float(self.changing_since or 0) < moment

    def updating_before(self, moment: float) -> bool:
        """Whether it is `updating`, set before `moment` (its request is over)."""
        return self.current_state is State.UPDATING and float(self.changing_since or 0) < moment

    @property
    def definition(self) -> Definition:
        return Definition(
            expression=self.expression,
            timezone=self.timezone,
            job=self.job,
            flexible_window_minutes=int(self.flexible_window_minutes or 0),
            start=self.start,
            end=self.end,
            overlap=self.overlap or Overlap.ALLOW,
            description=self.description,
            paused_at=self.paused_at,
            pause_note=self.pause_note,
            firings_per_hour=int(self.firings_per_hour or 0),
        )

    @property
    def held(self) -> int:
        """What it holds of the tenant's firings budget (`firings_held`)."""
        return int(self.firings_held or 0)

    @property
    def pending_definition(self) -> Definition | None:
        return Definition.from_json(self.pending) if self.pending else None

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "expression": self.expression,
            "timezone": self.timezone,
            "job": self.job,
            "flexible_window_minutes": int(self.flexible_window_minutes),
            "start": _iso(self.start),
            "end": _iso(self.end),
            "overlap": self.overlap or str(Overlap.ALLOW),
            "description": self.description,
            "state": "paused" if self.paused_at else "enabled",
            "paused_at": _iso(self.paused_at),
            "note": self.pause_note,
            "firings_per_minute": round(int(self.firings_per_hour or 0) / 60, 3),
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
        }


def _definition_actions(definition: Definition) -> list[Any]:
    """Update actions that make the record's definition `definition`: each field set, or removed when None."""
    actions = []
    for field in fields(Definition):
        attribute = getattr(ScheduleItem, field.name)
        value = getattr(definition, field.name)
        actions.append(attribute.remove() if value is None else attribute.set(value))
    return actions


def new_item(
    tenant: str, *, name: str, definition: Definition, created_at: datetime, token: str, now: float
) -> ScheduleItem:
    """A record not yet written, `creating` for the request `token` (`as_item` gives it to counters.take)."""
    return ScheduleItem(
        keys.schedule_key(tenant, name),
        gsi1pk=keys.schedules_partition(tenant),
        gsi1sk=name,
        tenant=tenant,
        name=name,
        **{field.name: getattr(definition, field.name) for field in fields(Definition)},
        firings_held=definition.firings_per_hour,
        created_at=created_at,
        state=str(State.CREATING),
        token=token,
        changing_since=now,
    )


def with_definition(record: ScheduleItem, definition: Definition) -> ScheduleItem:
    """A copy of `record` (not written) whose definition is `definition`: what an update would make of it."""
    copy = ScheduleItem.from_raw_data(record.serialize())
    for field in fields(Definition):
        setattr(copy, field.name, getattr(definition, field.name))
    return copy


def as_item(record: ScheduleItem) -> dict[str, Any]:
    """The record in the low-level client's form, for a transaction."""
    return record.serialize()


def item_key(tenant: str, name: str) -> dict[str, Any]:
    """The record's low-level `Key`, for a transaction that deletes it."""
    return keys.item_key(keys.schedule_key(tenant, name))


def get(tenant: str, name: str) -> ScheduleItem | None:
    try:
        return ScheduleItem.get(keys.schedule_key(tenant, name), consistent_read=True)
    except ScheduleItem.DoesNotExist:
        return None


def held_by(token: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The condition "this record is owned by the request `token`", in the low-level form a
    transaction's Delete takes (expression, names, values): see counters.give_back."""
    return "#token = :token", {"#token": "token"}, {":token": {"S": token}}


def _update(tenant: str, name: str, actions: list[Any], condition: Condition) -> ScheduleItem | None:
    """The record as the update left it; None if `condition` failed."""
    record = ScheduleItem(keys.schedule_key(tenant, name))
    try:
        record.update(actions=actions, condition=condition)
    except UpdateError as error:
        if error.cause_response_code == "ConditionalCheckFailedException":
            return None
        raise
    return record


def mark_active(tenant: str, name: str, token: str) -> bool:
    """`creating` -> `active`, if the record is still the request `token`'s; False if not."""
    return (
        _update(
            tenant,
            name,
            [
                ScheduleItem.state.set(str(State.ACTIVE)),
                ScheduleItem.token.remove(),
                ScheduleItem.changing_since.remove(),
            ],
            (ScheduleItem.state == str(State.CREATING)) & (ScheduleItem.token == token),
        )
        is not None
    )


def _active() -> Condition:
    return ScheduleItem.pk.exists() & (ScheduleItem.state.does_not_exist() | (ScheduleItem.state == str(State.ACTIVE)))


@dataclass(frozen=True)
class Change:
    """A conditional update of a record: what it sets, and the state it must be in. Applied alone (`apply`),
    or, when it changes what the record holds of the firings budget, in one transaction with the tenant's
    counter (`as_update` gives it to counters.move)."""

    actions: list[Any]
    condition: Condition
    firings_held: int  # what the record holds of the firings budget once it is applied


def apply(tenant: str, name: str, change: Change) -> ScheduleItem | None:
    """The record as `change` left it; None if its condition failed."""
    return _update(tenant, name, change.actions, change.condition)


def as_update(tenant: str, name: str, change: Change) -> dict[str, Any]:
    """`change` as a low-level UpdateItem's parameters (no TableName), for a transaction."""
    params = ScheduleItem(keys.schedule_key(tenant, name)).get_update_kwargs_from_instance(
        actions=change.actions, condition=change.condition
    )
    params.pop("TableName", None)
    return params


def _holding(held: int) -> Condition:
    """The record holds `held` of the firings budget (a record older than the budget holds none)."""
    same = ScheduleItem.firings_held == held
    return same | ScheduleItem.firings_held.does_not_exist() if held == 0 else same


def marking_updating(token: str, now: float, pending: Definition, *, held: int, holding: int) -> Change:
    """`active` -> `updating` for the request `token`, which is applying `pending`; the record then holds
    `holding` of the firings budget instead of `held`. Refused unless the record is active and holds `held`."""
    actions = [
        ScheduleItem.state.set(str(State.UPDATING)),
        ScheduleItem.token.set(token),
        ScheduleItem.changing_since.set(now),
        ScheduleItem.pending.set(pending.to_json()),
        ScheduleItem.firings_held.set(holding),
    ]
    return Change(actions, _active() & _holding(held), holding)


def finishing_update(token: str, definition: Definition, now: datetime) -> Change:
    """`updating` -> `active` with `definition` as the record's (and its weight held), if the request `token`
    still owns it (else a delete took it over)."""
    actions = [
        *_definition_actions(definition),
        ScheduleItem.firings_held.set(definition.firings_per_hour),
        ScheduleItem.updated_at.set(now),
        ScheduleItem.state.set(str(State.ACTIVE)),
        ScheduleItem.token.remove(),
        ScheduleItem.changing_since.remove(),
        ScheduleItem.pending.remove(),
    ]
    return Change(actions, _owned_while(State.UPDATING, token), definition.firings_per_hour)


def abandoning_update(token: str, kept: Definition) -> Change:
    """`updating` -> `active`, the record's definition `kept` unchanged (Scheduler refused the new one), if the
    request `token` still owns it."""
    actions = [
        ScheduleItem.firings_held.set(kept.firings_per_hour),
        ScheduleItem.state.set(str(State.ACTIVE)),
        ScheduleItem.token.remove(),
        ScheduleItem.changing_since.remove(),
        ScheduleItem.pending.remove(),
    ]
    return Change(actions, _owned_while(State.UPDATING, token), kept.firings_per_hour)


def take_over_stale_update(
    tenant: str, name: str, token: str, now: float, *, stale_before: float
) -> ScheduleItem | None:
    """Make an `updating` record set before `stale_before` (its request is over) the request `token`'s, to
    finish applying its pending definition: the record then, or None if it is not such a record."""
    actions = [ScheduleItem.token.set(token), ScheduleItem.changing_since.set(now)]
    condition = (ScheduleItem.state == str(State.UPDATING)) & (ScheduleItem.changing_since < stale_before)
    return _update(tenant, name, actions, condition)


def _owned_while(state: State, token: str) -> Condition:
    return (ScheduleItem.state == str(state)) & (ScheduleItem.token == token)


class Mark(Enum):
    MARKED = "marked"
    GONE = "gone"  # no record
    BUSY = "busy"  # a create still owns it: `creating`, set at or after `stale_before`


def mark_deleting(tenant: str, name: str, token: str, now: float, *, stale_before: float) -> Mark:
    """Make the record `deleting` for the request `token`: an active or `deleting` record, or a
    `creating` one set before `stale_before` (its create is over). A `deleting` record changes owner:
    the request that took it last removes it."""
    marked = _update(
        tenant,
        name,
        [
            ScheduleItem.state.set(str(State.DELETING)),
            ScheduleItem.token.set(token),
            ScheduleItem.changing_since.set(now),
            ScheduleItem.pending.remove(),
        ],
        ScheduleItem.pk.exists()
        & (
            ScheduleItem.state.does_not_exist()
            | (ScheduleItem.state != str(State.CREATING))
            | (ScheduleItem.changing_since < stale_before)
        ),
    )
    if marked is not None:
        return Mark.MARKED
    return Mark.BUSY if get(tenant, name) is not None else Mark.GONE


def take_over_stale(tenant: str, name: str, token: str, now: float, *, stale_before: float) -> bool:
    """Make a `creating` or `deleting` record set before `stale_before` (its request is over)
    `deleting` for the request `token`; False if it is not such a record."""
    return None is not _update(
        tenant,
        name,
        [
            ScheduleItem.state.set(str(State.DELETING)),
            ScheduleItem.token.set(token),
            ScheduleItem.changing_since.set(now),
        ],
        ScheduleItem.state.is_in(str(State.CREATING), str(State.DELETING))
        & (ScheduleItem.changing_since < stale_before),
    )


def page(tenant: str, limit: int, after: str | None) -> tuple[list[ScheduleItem], bool]:
    """Up to `limit` of the tenant's records by name, after the one named `after`; and whether the
    index has more after them."""
    params: dict[str, Any] = {"limit": limit}
    if after is not None:
        params["last_evaluated_key"] = {
            "pk": {"S": keys.schedule_key(tenant, after)},
            "gsi1pk": {"S": keys.schedules_partition(tenant)},
            "gsi1sk": {"S": after},
        }
    results = ScheduleItem.by_tenant.query(keys.schedules_partition(tenant), **params)
    items = list(results)
    return items, results.last_evaluated_key is not None


def list_all(tenant: str) -> list[ScheduleItem]:
    return list(ScheduleItem.by_tenant.query(keys.schedules_partition(tenant)))


def count(tenant: str) -> int:
    """The tenant's records, counted on the index without reading them out."""
    return sum(page["Count"] for page in table.partition_pages(keys.schedules_partition(tenant), Select="COUNT"))
