"""A unique key's lock, one item per (tenant, key): `unique#<tenant>#<key>` (shared/flow/unique.py).

Attributes: `holder` (the job id), `until` (`started` or `finished`), `sent` (whether its enqueue confirmed the
job sent), `unsent_until` (when an unconfirmed lock is free again), `expires_at` (when the lock is free whatever
its holder does; the table's TTL deletes it some time after).

**Taking it** (`acquire`, by the enqueue of a job with a unique key, or by the worker for a schedule's firing) is
one conditional put: it succeeds where there is no lock, or an expired one, or an unconfirmed one past
`unsent_until`, or one this very job holds (a retried request under its idempotency key). Where the put fails,
it returns the lock as it is; its holder's record then says whether it still holds the key (a strongly consistent
read of that record, through `status_of`), and if it does not, one more conditional put takes the lock over from
exactly that holder. So a key comes free when its holder starts (or ends), without the worker writing a lock.

**Confirming** (`confirm`) follows the job's send: one update, conditioned on the holder. If the send fails, the
lock is given back (`release`); if the request dies between the two, the lock is free after
UNIQUE_UNSENT_SECONDS, and never names a job that was not enqueued for longer.

Cost per unique job: the put and the confirm (2 small writes) at its enqueue; nothing at the worker. Per
duplicate: one refused put (1 WRU) and, where the lock was confirmed, one consistent read of its holder's record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from shared.aws.clients import client, is_condition_failure, single_attempt_client
from shared.flow import limits
from shared.flow.unique import Unique, Until, still_holds
from shared.model import Status
from shared.store import keys, table

_TAKE_TRIES = 3
# A job whose record says one of these has not started: it holds any lock (`waiting`: a job waiting its turn).
_NOT_STARTED = frozenset(status for status in Status if status.value in ("queued", "waiting"))


@dataclass(frozen=True)
class Lock:
    """A lock as it stands."""

    holder: str
    until: Until
    sent: bool


_GONE = Lock(holder="", until=Until.STARTED, sent=False)  # a lock that was there for the condition, gone since


@dataclass(frozen=True)
class Acquired:
    """The job holds the key now."""


@dataclass(frozen=True)
class Duplicate:
    """Another job holds the key: the enqueue answers it (`holder`), and enqueues nothing."""

    holder: str


def _client(single_attempt: bool) -> Any:
    return single_attempt_client("dynamodb") if single_attempt else client("dynamodb")


def _key(tenant: str, key: str) -> dict[str, Any]:
    return keys.item_key(keys.unique_key(tenant, key))


def read(tenant: str, key: str) -> Lock | None:
    """The key's lock as it stands (strongly consistent), expired or not; None if there is no item."""
    item = client("dynamodb").get_item(TableName=table.name(), Key=_key(tenant, key), ConsistentRead=True).get("Item")
    return _lock_of(item) if item else None


def _lock_of(item: dict[str, Any]) -> Lock:
    return Lock(holder=item["holder"]["S"], until=Until(item["until"]["S"]), sent=item["sent"]["BOOL"])


def acquire(
    tenant: str,
    unique: Unique,
    job_id: str,
    now: float,
    status_of: Callable[[str], Status | None],
    *,
    due_at: float | None = None,
    sent: bool = False,
    single_attempt: bool = False,
) -> Acquired | Duplicate:
    """Take the tenant's `unique` key for `job_id` at `now`, or answer the job that holds it.

    `status_of(job id)`: the job's status by its record (a strongly consistent read), None where it has none.
    `sent`: the job is on its way already (a schedule's firing the worker received): no confirm follows."""
    free = "attribute_not_exists(pk) OR expires_at <= :now OR holder = :me OR (sent = :false AND unsent_until <= :now)"
    free_values: dict[str, Any] = {":now": {"N": repr(now)}, ":me": {"S": job_id}, ":false": {"BOOL": False}}
    condition, values = free, free_values
    holder = ""
    for _ in range(_TAKE_TRIES):
        met = _put(tenant, unique, job_id, now, due_at, sent, condition, values, single_attempt=single_attempt)
        if met is None:
            return Acquired()
        if met is _GONE:
            condition, values = free, free_values  # released or expired meanwhile: take it as a free one
            continue
        holder = met.holder
        if not met.sent:
            return Duplicate(holder)  # its enqueue is under way: it holds the key until UNIQUE_UNSENT_SECONDS pass
        status = status_of(holder)
        started = status is not None and status not in _NOT_STARTED
        if still_holds(met.until, started=started, finished=status is not None and status.finished):
            return Duplicate(holder)
        # Its holder started (or ended): take the lock over from exactly that holder.
        condition, values = "holder = :stale", {":stale": {"S": holder}}
    return Duplicate(holder)  # the key changed hands at every try: the latest holder answers


def _put(
    tenant: str,
    unique: Unique,
    job_id: str,
    now: float,
    due_at: float | None,
    sent: bool,
    condition: str,
    values: dict[str, Any],
    *,
    single_attempt: bool,
) -> Lock | None:
    """Put the lock for `job_id` if `condition` holds: None if put, else the lock as it stands."""
    item = _key(tenant, unique.key) | {
        "holder": {"S": job_id},
        "until": {"S": str(unique.until)},
        "sent": {"BOOL": sent},
        "expires_at": {"N": str(int(unique.expires_at(now, due_at)))},
    }
    if not sent:
        item["unsent_until"] = {"N": repr(now + limits.UNIQUE_UNSENT_SECONDS)}
    try:
        _client(single_attempt).put_item(
            TableName=table.name(),
            Item=item,
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if not is_condition_failure(error):
            raise
        found = error.response.get("Item")
        return (_lock_of(found) if found else read(tenant, unique.key)) or _GONE
    return None


def confirm(tenant: str, key: str, job_id: str) -> bool:
    """The job holding the lock was sent: the lock holds until its holder starts (or ends), or it expires. False if
    the job no longer holds it (it was unconfirmed long enough for another enqueue to take it)."""
    return _update_held(tenant, key, job_id, "SET sent = :true REMOVE unsent_until", {":true": {"BOOL": True}})


def release(tenant: str, key: str, job_id: str) -> bool:
    """The job holding the lock was not sent after all: the key is free at once. False if it held it no longer."""
    try:
        client("dynamodb").delete_item(
            TableName=table.name(),
            Key=_key(tenant, key),
            ConditionExpression="holder = :me",
            ExpressionAttributeValues={":me": {"S": job_id}},
        )
    except ClientError as error:
        if is_condition_failure(error):
            return False
        raise
    return True


def _update_held(tenant: str, key: str, job_id: str, update: str, values: dict[str, Any]) -> bool:
    try:
        client("dynamodb").update_item(
            TableName=table.name(),
            Key=_key(tenant, key),
            UpdateExpression=update,
            ConditionExpression="holder = :me",
            ExpressionAttributeValues={":me": {"S": job_id}} | values,
        )
    except ClientError as error:
        if is_condition_failure(error):
            return False
        raise
    return True
