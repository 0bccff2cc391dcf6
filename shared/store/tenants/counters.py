"""Counter items: a tenant's quota usage, the holds that far-future jobs take, the rate limiter's windows.

- `usage#<tenant>`: one number per quota counter. Units are taken in one transaction with the
  item they stand for (a schedule's record, a hold) and given back in one transaction with that
  item's conditional delete, so a counter is always the sum of what those items hold: their number
  (schedules, far-future jobs), or their weight (a schedule's firings per hour, which an update
  changes in one transaction with the record: `move`).
- `hold#<job id>`: a far-future job's unit; gsi1 partition `farfuture#<tenant>`, sort key its
  due time then job id.
- `ratewin#<tenant>`: a map of API instance id -> {w: the last second it served the tenant,
  d: its demand}, expiring with the table's TTL when the tenant goes idle.

Low-level client: a unit is taken on an enqueue's path, and every API instance reports each
second it serves a tenant (docs/decisions/storage-idioms.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from botocore.exceptions import ClientError

from shared.aws.clients import aws_error_code, client, single_attempt_client
from shared.store import keys, table
from shared.store.conditional import failed_conditions


def _usage_item_key(tenant: str) -> dict[str, Any]:
    return keys.item_key(keys.usage_key(tenant))


# Quota usage --------------------------------------------------------------------------------------


class Take(Enum):
    TAKEN = "taken"
    DUPLICATE = "duplicate"  # an item with that key exists already: nothing taken
    AT_LIMIT = "at limit"  # the counter is at the limit already: nothing taken


def usage(tenant: str, counters: tuple[str, ...]) -> dict[str, int]:
    """The tenant's counters now (a consistent read; 0 for a counter never moved)."""
    item = (
        client("dynamodb")
        .get_item(TableName=table.name(), Key=_usage_item_key(tenant), ConsistentRead=True)
        .get("Item")
    )
    return {counter: int((item or {}).get(counter, {}).get("N", "0")) for counter in counters}


@dataclass(frozen=True)
class Units:
    """`amount` units of a counter, which may not pass `limit` once added."""

    amount: int
    limit: int


def _adding(tenant: str, units: Mapping[str, Units]) -> dict[str, Any]:
    """The usage item's Update that adds `units` to their counters, each only if it stays within its limit."""
    taken = {counter: unit for counter, unit in units.items() if unit.amount}
    names = {f"#c{i}": counter for i, counter in enumerate(taken)}
    values: dict[str, Any] = {":tenant": {"S": tenant}}
    adds, conditions = [], []
    for i, unit in enumerate(taken.values()):
        adds.append(f"#c{i} :a{i}")
        values[f":a{i}"] = {"N": str(unit.amount)}
        if unit.amount > 0:  # a negative amount gives units back: never refused
            conditions.append(f"(attribute_not_exists(#c{i}) OR #c{i} <= :room{i})")
            values[f":room{i}"] = {"N": str(unit.limit - unit.amount)}
    update: dict[str, Any] = {
        "TableName": table.name(),
        "Key": _usage_item_key(tenant),
        "UpdateExpression": ("ADD " + ", ".join(adds) + " " if adds else "") + "SET tenant = :tenant",
        "ExpressionAttributeValues": values,
    }
    if names:
        update["ExpressionAttributeNames"] = names
    if conditions:
        update["ConditionExpression"] = " AND ".join(conditions)
    return update


def take(tenant: str, units: Mapping[str, Units], item: dict[str, Any]) -> Take:
    """Add `units` to their counters unless one would pass its limit, and put `item` unless its key exists,
    in one transaction."""
    add = _adding(tenant, units)
    try:
        client("dynamodb").transact_write_items(
            TransactItems=[
                {"Update": add},
                {
                    "Put": {
                        "TableName": table.name(),
                        "Item": item,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    except ClientError as error:
        usage_failed, item_failed = _cancelled(error)
        if item_failed:
            return Take.DUPLICATE
        if usage_failed:
            return Take.AT_LIMIT
        raise
    return Take.TAKEN


class Move(Enum):
    MOVED = "moved"
    ITEM_REFUSED = "item refused"  # the item's update's condition failed: nothing changed
    AT_LIMIT = "at limit"  # a counter would pass its limit: nothing changed


def move(tenant: str, units: Mapping[str, Units], item_update: dict[str, Any]) -> Move:
    """Apply `item_update` (a conditional UpdateItem's parameters, without TableName) and add `units` (negative:
    give units back) in one transaction: an item that holds a different number of units than it did."""
    add = _adding(tenant, units)
    try:
        client("dynamodb").transact_write_items(
            TransactItems=[{"Update": add}, {"Update": {"TableName": table.name(), **item_update}}]
        )
    except ClientError as error:
        usage_failed, item_failed = _cancelled(error)
        if item_failed:
            return Move.ITEM_REFUSED
        if usage_failed:
            return Move.AT_LIMIT
        raise
    return Move.MOVED


Condition = tuple[str, dict[str, str], dict[str, Any]]  # expression, attribute names, attribute values


def give_back(
    tenant: str,
    amounts: Mapping[str, int],
    key: dict[str, Any],
    *,
    single_attempt: bool = False,
    only_if: Condition | None = None,
) -> bool:
    """Delete the item `key` and subtract `amounts` from their counters, in one transaction. False if the item
    was gone already (or fails `only_if`, a further condition on it). A counter holding less than its amount
    (reset by a recount while the item existed): the item is deleted alone.

    `single_attempt`: no botocore retries, for a caller that gives it back later if the store fails."""
    dynamodb = single_attempt_client("dynamodb") if single_attempt else client("dynamodb")
    delete: dict[str, Any] = {"TableName": table.name(), "Key": key, "ConditionExpression": "attribute_exists(pk)"}
    if only_if is not None:
        expression, names, values = only_if
        delete |= {
            "ConditionExpression": f"attribute_exists(pk) AND ({expression})",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
    given = {counter: amount for counter, amount in amounts.items() if amount}
    for _ in range(2):
        if not given:  # it holds no units (an at() schedule's firings), or none its counters still count
            return _delete_alone(dynamodb, delete)
        names = {f"#c{i}": counter for i, counter in enumerate(given)}
        values = {f":minus{i}": {"N": str(-amount)} for i, amount in enumerate(given.values())}
        values |= {f":amount{i}": {"N": str(amount)} for i, amount in enumerate(given.values())}
        subtract = {
            "TableName": table.name(),
            "Key": _usage_item_key(tenant),
            "UpdateExpression": "ADD " + ", ".join(f"#c{i} :minus{i}" for i in range(len(given))),
            "ConditionExpression": " AND ".join(f"#c{i} >= :amount{i}" for i in range(len(given))),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        try:
            dynamodb.transact_write_items(TransactItems=[{"Update": subtract}, {"Delete": delete}])
        except ClientError as error:
            usage_failed, item_failed = _cancelled(error)
            if item_failed:
                return False
            if not usage_failed:
                raise
            # A counter holds less than the item's amount (a recount reset it): give back the others only.
            held = usage(tenant, tuple(given))
            given = {counter: amount for counter, amount in given.items() if held[counter] >= amount}
            continue
        return True
    return _delete_alone(dynamodb, delete)


def _delete_alone(dynamodb: Any, delete: dict[str, Any]) -> bool:
    try:
        dynamodb.delete_item(**delete)
    except ClientError as failed:
        if aws_error_code(failed) == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _cancelled(error: ClientError) -> tuple[bool, bool]:
    """For a cancelled two-action transaction: (the first action's condition failed, the second's)."""
    failed = failed_conditions(error, 2) or [False, False]
    return failed[0], failed[1]


def set_usage(tenant: str, counts: dict[str, int]) -> None:
    """Overwrite the tenant's counters (a recount's result)."""
    names = {f"#c{i}": counter for i, counter in enumerate(counts)}
    values = {f":v{i}": {"N": str(count)} for i, count in enumerate(counts.values())}
    client("dynamodb").update_item(
        TableName=table.name(),
        Key=_usage_item_key(tenant),
        UpdateExpression="SET " + ", ".join(f"#c{i} = :v{i}" for i in range(len(counts))) + ", tenant = :tenant",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values | {":tenant": {"S": tenant}},
    )


# Far-future holds ---------------------------------------------------------------------------------


def hold_item_key(job_id: str) -> dict[str, Any]:
    return keys.item_key(keys.hold_key(job_id))


def hold_item(tenant: str, job_id: str, due_at: float) -> dict[str, Any]:
    """A far-future job's hold, for `take` to put with its unit."""
    return hold_item_key(job_id) | {
        "tenant": {"S": tenant},
        "due_at": {"N": str(int(due_at))},
        "gsi1pk": {"S": keys.far_future_partition(tenant)},
        "gsi1sk": {"S": f"{int(due_at):011d}#{job_id}"},
    }


def wait_hold_item_key(job_id: str) -> dict[str, Any]:
    return keys.item_key(keys.wait_hold_key(job_id))


def wait_hold_item(tenant: str, job_id: str, now: float) -> dict[str, Any]:
    """A waiting durable job's hold, for `take` to put with its unit (no index: nothing lists them)."""
    return wait_hold_item_key(job_id) | {"tenant": {"S": tenant}, "since": {"N": str(int(now))}}


def holds(tenant: str) -> list[dict[str, Any]]:
    """The tenant's holds, soonest due first: [{"job_id", "due_at"}]."""
    return [
        {"job_id": keys.job_id_of_hold(item["pk"]["S"]), "due_at": float(item["due_at"]["N"])}
        for page in table.partition_pages(keys.far_future_partition(tenant))
        for item in page["Items"]
    ]


# Rate-limiter windows -----------------------------------------------------------------------------


def report_rate_window(
    tenant: str, instance: str, window: int, demand: float, *, forget: list[str], expires_at: int
) -> dict[str, tuple[int, float]]:
    """Set this instance's entry (its window and demand) on the tenant's item, remove the entries of the
    instances in `forget`, and return every entry as it is then: instance -> (last window, demand).

    One attempt: a report is made again each second, and an instance's first (on its first request of the
    tenant) is on the request path, which botocore's retries held for seconds in a store blip."""
    dynamodb = single_attempt_client("dynamodb")
    key = keys.item_key(keys.rate_window_key(tenant))
    names = {"#i": "instances", "#me": instance} | {f"#g{n}": gone for n, gone in enumerate(forget)}
    removes = ", ".join(f"#i.#g{n}" for n in range(len(forget)))
    update = "SET #i.#me = :w, expires_at = :ttl" + (f" REMOVE {removes}" if removes else "")
    entry = {"M": {"w": {"N": str(window)}, "d": {"N": f"{demand:.6g}"}}}
    values = {":w": entry, ":ttl": {"N": str(expires_at)}}
    try:
        response = dynamodb.update_item(
            TableName=table.name(),
            Key=key,
            UpdateExpression=update,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
    except ClientError as error:  # the tenant's first report: no map yet to set an entry in
        if aws_error_code(error) != "ValidationException":
            raise
        response = dynamodb.update_item(
            TableName=table.name(),
            Key=key,
            UpdateExpression="SET #i = :entry, expires_at = :ttl",
            ExpressionAttributeNames={"#i": "instances"},
            ExpressionAttributeValues={":entry": {"M": {instance: entry}}, ":ttl": values[":ttl"]},
            ReturnValues="ALL_NEW",
        )
    found = response["Attributes"].get("instances", {}).get("M", {})
    return {name: _rate_entry(value) for name, value in found.items()}


def _rate_entry(value: dict[str, Any]) -> tuple[int, float]:
    fields = value["M"]
    return int(fields["w"]["N"]), float(fields["d"]["N"])
