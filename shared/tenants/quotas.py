"""A tenant's limits and what it holds against them.

Limits: defaults in shared/settings.py, overrides per tenant set by an operator. Overrides live on
the tenant's item (`tenant#<name>`, attribute `limits`, a map of name -> number) so the API reads
them with one GetItem per tenant per instance per TENANT_LIMITS_CACHE_SECONDS.

Usage: one item per tenant (`usage#<name>`) with a counter per quota. A unit is taken in one
transaction with the item it stands for (a schedule's record, a far-future job's hold): the
counter's conditional ADD refuses a unit beyond the limit, and the item's own condition refuses a
duplicate. A unit is given back in one transaction with that item's conditional delete, so of two
racing give-backs (a job that fires while it is cancelled) exactly one counts. The counter is
therefore always the number of those items: concurrent requests never overshoot the limit.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import environment, settings
from shared.aws.clients import aws_error_code, client, single_attempt_client
from shared.errors import QuotaExceeded
from shared.refresh import Refresher


@dataclass(frozen=True)
class TenantLimits:
    max_schedules: int = settings.TENANT_MAX_SCHEDULES
    max_far_future_jobs: int = settings.TENANT_MAX_FAR_FUTURE_JOBS
    enqueue_rate_per_second: float = settings.TENANT_ENQUEUE_RATE_PER_SECOND
    enqueue_burst: int = settings.TENANT_ENQUEUE_BURST

    @classmethod
    def names(cls) -> list[str]:
        return [field.name for field in dataclasses.fields(cls)]


DEFAULTS = TenantLimits()


@dataclass(frozen=True)
class Quota:
    """Something a tenant holds a bounded number of: `counter` on its usage item, bounded by `limit_name`."""

    counter: str
    limit_name: str
    noun: str  # how a message names it: "schedule quota reached: ..."


SCHEDULES = Quota(counter="schedules", limit_name="max_schedules", noun="schedule")
FAR_FUTURE_JOBS = Quota(counter="far_future_jobs", limit_name="max_far_future_jobs", noun="far-future job")
QUOTAS = (SCHEDULES, FAR_FUTURE_JOBS)


_cached: dict[str, tuple[TenantLimits, float]] = {}


def _table() -> str:
    return environment.current().table


def _tenant_key(tenant: str) -> dict[str, Any]:
    return {"pk": {"S": f"tenant#{tenant}"}}


def usage_key(tenant: str) -> dict[str, Any]:
    return {"pk": {"S": f"usage#{tenant}"}}


def _from_item(item: dict[str, Any] | None) -> TenantLimits:
    overrides = (item or {}).get("limits", {}).get("M", {})
    values: dict[str, Any] = {}
    for field in dataclasses.fields(TenantLimits):
        if field.name in overrides:
            number = overrides[field.name]["N"]
            values[field.name] = float(number) if field.type in ("float", float) else int(float(number))
    return dataclasses.replace(DEFAULTS, **values)


def overrides_of(tenant: str) -> dict[str, float | int]:
    """Only the limits an operator set for this tenant (read now, not cached)."""
    item = client("dynamodb").get_item(TableName=_table(), Key=_tenant_key(tenant), ConsistentRead=True).get("Item")
    limits = _from_item(item)
    overridden = (item or {}).get("limits", {}).get("M", {})
    return {name: getattr(limits, name) for name in TenantLimits.names() if name in overridden}


_rereads = Refresher("tenant-limits")


def limits_for(tenant: str) -> TenantLimits:
    """The tenant's limits, read at most once per TENANT_LIMITS_CACHE_SECONDS per instance.

    Once read, they are answered from the cache and re-read in the background when their time runs
    out (shared/refresh.py): a store blip must not slow or fail enqueues, which never touch the store
    otherwise. A tenant this instance has not read yet while the store fails gets the defaults.
    """
    cached = _cached.get(tenant)
    if cached is not None:
        if cached[1] <= time.monotonic():
            _rereads.start(tenant, lambda: _read_limits(tenant))
        return cached[0]
    try:
        return _read_limits(tenant)
    except (ClientError, BotoCoreError):
        _cached[tenant] = (DEFAULTS, 0.0)  # served from now on, and re-read in the background
        return DEFAULTS


def _read_limits(tenant: str) -> TenantLimits:
    item = client("dynamodb").get_item(TableName=_table(), Key=_tenant_key(tenant)).get("Item")
    limits = _from_item(item)
    _cached[tenant] = (limits, time.monotonic() + settings.TENANT_LIMITS_CACHE_SECONDS)
    return limits


def check_override(name: str, value: float) -> None:
    """ValueError unless `value` is a sensible `name` limit (whole and >= 0; rates > 0)."""
    if name not in TenantLimits.names():
        raise ValueError(f"unknown limit {name!r}; known: {', '.join(TenantLimits.names())}")
    if name == "enqueue_rate_per_second":
        if not value > 0:
            raise ValueError(f"{name} must be a number above 0")
    elif value != int(value) or value < 0:
        raise ValueError(f"{name} must be a whole number, 0 or more")


def set_limits(tenant: str, **overrides: float | int | None) -> TenantLimits:
    """Set (a number) or clear (None) the tenant's overrides in one write; returns the limits now in force.

    Other API instances see a change within TENANT_LIMITS_CACHE_SECONDS. Lowering a quota below what
    the tenant holds takes nothing away: it only refuses new units until the tenant is under it.
    """
    for name, value in overrides.items():
        if value is not None:
            check_override(name, value)
        elif name not in TenantLimits.names():
            raise ValueError(f"unknown limit {name!r}; known: {', '.join(TenantLimits.names())}")
    ddb = client("dynamodb")
    ddb.update_item(
        TableName=_table(),
        Key=_tenant_key(tenant),
        UpdateExpression="SET #l = if_not_exists(#l, :empty)",
        ExpressionAttributeNames={"#l": "limits"},
        ExpressionAttributeValues={":empty": {"M": {}}},
    )
    sets = [name for name, value in overrides.items() if value is not None]
    removes = [name for name, value in overrides.items() if value is None]
    if sets or removes:
        names = {"#l": "limits"} | {f"#n{i}": name for i, name in enumerate(overrides)}
        index = {name: i for i, name in enumerate(overrides)}
        expression = ""
        if sets:
            expression += "SET " + ", ".join(f"#l.#n{index[name]} = :v{index[name]}" for name in sets)
        if removes:
            expression += " REMOVE " + ", ".join(f"#l.#n{index[name]}" for name in removes)
        params: dict[str, Any] = {}
        if sets:
            params["ExpressionAttributeValues"] = {f":v{index[name]}": {"N": str(overrides[name])} for name in sets}
        ddb.update_item(
            TableName=_table(),
            Key=_tenant_key(tenant),
            UpdateExpression=expression.strip(),
            ExpressionAttributeNames=names,
            **params,
        )
    _cached.pop(tenant, None)
    item = ddb.get_item(TableName=_table(), Key=_tenant_key(tenant), ConsistentRead=True).get("Item")
    return _from_item(item)


def clear_cache() -> None:
    """Forget cached limits (tests)."""
    _cached.clear()


# Usage ----------------------------------------------------------------------------------------------


def usage(tenant: str) -> dict[str, int]:
    """What the tenant holds now, per quota counter (a consistent read)."""
    item = client("dynamodb").get_item(TableName=_table(), Key=usage_key(tenant), ConsistentRead=True).get("Item")
    return {quota.counter: int((item or {}).get(quota.counter, {}).get("N", "0")) for quota in QUOTAS}


def _limit_of(tenant: str, quota: Quota) -> int:
    return int(getattr(limits_for(tenant), quota.limit_name))


def take(tenant: str, quota: Quota, item: dict[str, Any]) -> bool:
    """Take one unit of `quota` for `item` (a new item, written in the same transaction).

    Returns False, taking nothing, if an item with that key exists already (a duplicate).
    Raises QuotaExceeded if the tenant holds its limit already.
    """
    limit = _limit_of(tenant, quota)
    if limit < 1:
        raise QuotaExceeded(quota.noun, quota.limit_name, limit, usage(tenant)[quota.counter])
    try:
        client("dynamodb").transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": _table(),
                        "Key": usage_key(tenant),
                        "UpdateExpression": "ADD #c :one SET tenant = :tenant",
                        "ConditionExpression": "attribute_not_exists(#c) OR #c < :limit",
                        "ExpressionAttributeNames": {"#c": quota.counter},
                        "ExpressionAttributeValues": {
                            ":one": {"N": "1"},
                            ":limit": {"N": str(limit)},
                            ":tenant": {"S": tenant},
                        },
                    }
                },
                {
                    "Put": {
                        "TableName": _table(),
                        "Item": item,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    except ClientError as error:
        usage_failed, item_failed = _cancelled(error)
        if item_failed:
            return False
        if usage_failed:
            raise QuotaExceeded(quota.noun, quota.limit_name, limit, usage(tenant)[quota.counter]) from error
        raise
    return True


def give_back(tenant: str, quota: Quota, key: dict[str, Any], *, single_attempt: bool = False) -> bool:
    """Delete the item `key` and give its unit back, in one transaction. False if it was gone already.

    `single_attempt`: no botocore retries, for a caller that gives it back later if the store fails."""
    dynamodb = single_attempt_client("dynamodb") if single_attempt else client("dynamodb")
    try:
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": _table(),
                        "Key": usage_key(tenant),
                        "UpdateExpression": "ADD #c :minus_one",
                        "ConditionExpression": "#c > :zero",
                        "ExpressionAttributeNames": {"#c": quota.counter},
                        "ExpressionAttributeValues": {":minus_one": {"N": "-1"}, ":zero": {"N": "0"}},
                    }
                },
                {"Delete": {"TableName": _table(), "Key": key, "ConditionExpression": "attribute_exists(pk)"}},
            ]
        )
    except ClientError as error:
        usage_failed, item_failed = _cancelled(error)
        if item_failed:
            return False
        if usage_failed:
            # A counter already at 0 (reset by a recount while this item existed): delete the item alone.
            dynamodb.delete_item(TableName=_table(), Key=key)
            return True
        raise
    return True


def _cancelled(error: ClientError) -> tuple[bool, bool]:
    """For a cancelled two-action transaction: (the first action's condition failed, the second's)."""
    if aws_error_code(error) != "TransactionCanceledException":
        return False, False
    reasons = error.response.get("CancellationReasons") or []
    failed = [reason.get("Code") == "ConditionalCheckFailed" for reason in reasons]
    if len(failed) != 2:
        # No reasons given (some stores): the message lists them, "[ConditionalCheckFailed, None]".
        message = str(error.response.get("Error", {}).get("Message", ""))
        listed = message[message.find("[") + 1 : message.rfind("]")].split(",")
        failed = [part.strip() == "ConditionalCheckFailed" for part in listed]
    return (len(failed) > 0 and failed[0]), (len(failed) > 1 and failed[1])


def set_usage(tenant: str, counts: dict[str, int]) -> None:
    """Overwrite the tenant's counters (a recount's result)."""
    names = {f"#c{i}": counter for i, counter in enumerate(counts)}
    values = {f":v{i}": {"N": str(count)} for i, count in enumerate(counts.values())}
    client("dynamodb").update_item(
        TableName=_table(),
        Key=usage_key(tenant),
        UpdateExpression="SET " + ", ".join(f"#c{i} = :v{i}" for i in range(len(counts))) + ", tenant = :tenant",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values | {":tenant": {"S": tenant}},
    )
