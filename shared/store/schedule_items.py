"""Customer schedule records (`schedule#<tenant>#<name>`), and the runs their firings became.

A record is listed on gsi1 under `schedules#<tenant>`, sorted by name. It is written in one
transaction with a unit of the tenant's schedule quota (shared/store/counters.py `take`), so this
module builds it (`new_item`) and `take` puts it.

A record's `state` says which request owns it: `creating` (a create is making its Scheduler
schedule), `active`, or `deleting` (a delete is removing it). `creating` and `deleting` carry the
owning request's `token` and `changing_since`; every change of state is a conditional write on
them, so two requests never act on one record at once (shared/schedules/customer_schedules.py,
docs/decisions/schedules.md). A record written before states existed has none: it is active.

A pynamodb Model: schedules are read and written only on an operator's or a customer's schedule
request, never on an enqueue or a delivery, and the Model spells their typed attributes (times,
the job as JSON) once (docs/decisions/storage-idioms.md). A schedule's runs are job records, read
with the low-level client like every job item.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum, StrEnum
from typing import Any

from pynamodb.attributes import JSONAttribute, NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from shared import environment
from shared.aws.clients import client
from shared.model import JobRecord
from shared.store import job_items, keys, table
from shared.store.table_schema import RUNS_INDEX


class State(StrEnum):
    CREATING = "creating"
    ACTIVE = "active"
    DELETING = "deleting"


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None


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
    created_at = UTCDateTimeAttribute()
    state = UnicodeAttribute(null=True)  # State; none: active (a record older than states)
    token = UnicodeAttribute(null=True)  # the request that set `creating` or `deleting`
    changing_since = NumberAttribute(null=True)  # epoch seconds it was set at
    by_tenant = ByTenant()

    @property
    def current_state(self) -> State:
        return State(self.state) if self.state else State.ACTIVE

    def changing_before(self, moment: float) -> bool:
        """Whether it is `creating` or `deleting`, set before `moment` (its request is over)."""
        return self.current_state is not State.ACTIVE and float(self.changing_since or 0) < moment

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "expression": self.expression,
            "timezone": self.timezone,
            "job": self.job,
            "flexible_window_minutes": int(self.flexible_window_minutes),
            "start": _iso(self.start),
            "end": _iso(self.end),
            "created_at": _iso(self.created_at),
        }


def new_item(
    tenant: str,
    *,
    name: str,
    expression: str,
    timezone: str,
    job: dict[str, Any],
    flexible_window_minutes: int,
    start: datetime | None,
    end: datetime | None,
    created_at: datetime,
    token: str,
    now: float,
) -> ScheduleItem:
    """A record not yet written, `creating` for the request `token` (`as_item` gives it to counters.take)."""
    return ScheduleItem(
        keys.schedule_key(tenant, name),
        gsi1pk=keys.schedules_partition(tenant),
        gsi1sk=name,
        tenant=tenant,
        name=name,
        expression=expression,
        timezone=timezone,
        job=job,
        flexible_window_minutes=flexible_window_minutes,
        start=start,
        end=end,
        created_at=created_at,
        state=str(State.CREATING),
        token=token,
        changing_since=now,
    )


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


def _update(tenant: str, name: str, actions: list[Any], condition: Condition) -> bool:
    try:
        ScheduleItem(keys.schedule_key(tenant, name)).update(actions=actions, condition=condition)
    except UpdateError as error:
        if error.cause_response_code == "ConditionalCheckFailedException":
            return False
        raise
    return True


def mark_active(tenant: str, name: str, token: str) -> bool:
    """`creating` -> `active`, if the record is still the request `token`'s; False if not."""
    return _update(
        tenant,
        name,
        [ScheduleItem.state.set(str(State.ACTIVE)), ScheduleItem.token.remove(), ScheduleItem.changing_since.remove()],
        (ScheduleItem.state == str(State.CREATING)) & (ScheduleItem.token == token),
    )


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
        ],
        ScheduleItem.pk.exists()
        & (
            ScheduleItem.state.does_not_exist()
            | (ScheduleItem.state != str(State.CREATING))
            | (ScheduleItem.changing_since < stale_before)
        ),
    )
    if marked:
        return Mark.MARKED
    return Mark.BUSY if get(tenant, name) is not None else Mark.GONE


def take_over_stale(tenant: str, name: str, token: str, now: float, *, stale_before: float) -> bool:
    """Make a `creating` or `deleting` record set before `stale_before` (its request is over)
    `deleting` for the request `token`; False if it is not such a record."""
    return _update(
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


def runs(tenant: str, name: str, limit: int) -> list[JobRecord]:
    """The job records of the schedule's firings (once a worker has seen them), newest first."""
    # Straight to DynamoDB, not through the status cache: a cached query would hide new runs.
    items = client("dynamodb").query(
        TableName=table.name(),
        IndexName=RUNS_INDEX.name,
        KeyConditionExpression="gsi1pk = :runs",
        ExpressionAttributeValues={":runs": {"S": keys.runs_partition(tenant, name)}},
        ScanIndexForward=False,
        Limit=limit,
    )["Items"]
    return [job_items.record_from_item(item) for item in items]
