"""A throttle key's start log, one item per (tenant, key): `throttle#<tenant>#<key>`.

The item holds the log (shared/flow/throttle.py `StartLog`): `runs`, a flat list of numbers [counted at ms, how
many, ...], oldest first, at most MAX_RUNS runs; `last` (ms), the latest turn given; `limit` and `period`, the
figures of the last job that took a turn (one key, one pair of figures: a job naming other figures applies its
own from then on); `v`, a version that every write raises; and `expires_at`, the table's TTL, a day after the
log stops counting anything.

Turns are taken with a read and one conditional write on the version (`take_turns`): a worker that lost the race
gets the item as the winner left it from its failed write (no second read) and computes again, up to
THROTTLE_TAKE_TRIES times; then ThrottleContended, and its jobs wait. One attempt per call (no botocore
retries): a store that fails makes the caller's jobs wait (the throttle fails closed), never run uncounted. A
write applied whose answer was lost counts its turns twice: the first are never used, and the key admits fewer.

Cost per take: one strongly consistent read (~1 KB: 1 RRU) and one write (the item's size, ~1 KB: 1-2 WRU), for
every job of one key in a batch together.
"""

from __future__ import annotations

import math
from typing import Any

from botocore.exceptions import ClientError

from shared.aws.clients import is_condition_failure, single_attempt_client
from shared.errors import Unavailable
from shared.flow import limits
from shared.flow.throttle import StartLog, Throttle, Turn, take
from shared.store import keys, table

# The item stays a day after its last count stops holding anything back: a key used again within the day keeps its
# log (and `last`, which orders its turns); one never used again goes with the table's TTL.
_KEPT_SECONDS = 86_400


class ThrottleContended(Unavailable):
    """Other workers changed the key's log every time this one tried to take turns: its jobs wait and try again."""


def _client() -> Any:
    return single_attempt_client("dynamodb")


def _key(tenant: str, key: str) -> dict[str, Any]:
    return keys.item_key(keys.throttle_key(tenant, key))


def read(tenant: str, key: str) -> tuple[StartLog, int]:
    """The key's log and its version (0: no item), strongly consistent."""
    return _log_of(_item(tenant, key))


def _item(tenant: str, key: str) -> dict[str, Any]:
    return _client().get_item(TableName=table.name(), Key=_key(tenant, key), ConsistentRead=True).get("Item") or {}


def _log_of(item: dict[str, Any]) -> tuple[StartLog, int]:
    numbers = [int(value["N"]) for value in item.get("runs", {}).get("L", [])]
    runs = tuple(zip(numbers[0::2], numbers[1::2], strict=True))
    return StartLog(runs, int(item.get("last", {}).get("N", "0"))), int(item.get("v", {}).get("N", "0"))


def take_turns(tenant: str, throttle: Throttle, count: int, now: float) -> list[Turn]:
    """Turns for `count` jobs of the tenant's `throttle` key, in order, taken at `now` (this worker's clock).

    ThrottleContended when other workers won THROTTLE_TAKE_TRIES races for the item; an AWS error as it comes."""
    log, version = read(tenant, throttle.key)
    for _ in range(limits.THROTTLE_TAKE_TRIES):
        taken, turns = take(log, throttle, now, count)
        met = _write(tenant, throttle, taken, version, now)
        if met is None:
            return turns
        log, version = _log_of(met)
    raise ThrottleContended(f"throttle key {throttle.key!r}: lost {limits.THROTTLE_TAKE_TRIES} races for its log")


def _write(tenant: str, throttle: Throttle, log: StartLog, version: int, now: float) -> dict[str, Any] | None:
    """Write `log` if the item is still at `version`: None if written, else the item as another writer left it."""
    flat = [number for run in log.runs for number in run]
    newest = max([at for at, _ in log.runs] + [log.last_turn_ms, math.floor(now * 1000)])
    values: dict[str, Any] = {
        ":runs": {"L": [{"N": str(number)} for number in flat]},
        ":last": {"N": str(log.last_turn_ms)},
        ":limit": {"N": str(throttle.limit)},
        ":period": {"N": str(throttle.period_seconds)},
        ":next": {"N": str(version + 1)},
        ":ttl": {"N": str(newest // 1000 + throttle.period_seconds + _KEPT_SECONDS)},
    }
    condition = "attribute_not_exists(pk)"
    if version:
        condition = "v = :v"
        values[":v"] = {"N": str(version)}
    params = {
        "TableName": table.name(),
        "Key": _key(tenant, throttle.key),
        "UpdateExpression": "SET #runs = :runs, #last = :last, #limit = :limit, #period = :period, v = :next, "
        "expires_at = :ttl",
        "ConditionExpression": condition,
        "ExpressionAttributeNames": {"#runs": "runs", "#last": "last", "#limit": "limit", "#period": "period"},
        "ExpressionAttributeValues": values,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    try:
        _client().update_item(**params)
    except ClientError as error:
        if not is_condition_failure(error):
            raise
        return error.response.get("Item") or _item(tenant, throttle.key)  # a store that returns no item: read it
    return None
