"""A tenant's limits: defaults in shared/settings.py, overrides per tenant set by an operator.

Overrides live on the tenant's item (`tenant#<name>`, attribute `limits`, a map of name -> number)
so the API reads them with one GetItem per tenant per instance per TENANT_LIMITS_CACHE_SECONDS.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from shared import settings
from shared.aws import client


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

_cached: dict[str, tuple[TenantLimits, float]] = {}


def _table() -> str:
    return settings.env("CORRAL_TABLE", settings.TABLE_NAME)


def _from_item(item: dict[str, Any] | None) -> TenantLimits:
    overrides = (item or {}).get("limits", {}).get("M", {})
    values: dict[str, Any] = {}
    for field in dataclasses.fields(TenantLimits):
        if field.name in overrides:
            number = overrides[field.name]["N"]
            values[field.name] = float(number) if field.type in ("float", float) else int(number)
    return dataclasses.replace(DEFAULTS, **values)


def limits_for(tenant: str) -> TenantLimits:
    """The tenant's limits, read at most once per TENANT_LIMITS_CACHE_SECONDS per instance."""
    now = time.monotonic()
    cached = _cached.get(tenant)
    if cached and cached[1] > now:
        return cached[0]
    item = client("dynamodb").get_item(TableName=_table(), Key={"pk": {"S": f"tenant#{tenant}"}}).get("Item")
    limits = _from_item(item)
    _cached[tenant] = (limits, now + settings.TENANT_LIMITS_CACHE_SECONDS)
    return limits


def set_limits(tenant: str, **overrides: float | int | None) -> TenantLimits:
    """Set (a number) or clear (None) the tenant's overrides; returns the limits now in force."""
    unknown = set(overrides) - set(TenantLimits.names())
    if unknown:
        raise ValueError(f"unknown limit(s): {', '.join(sorted(unknown))}; known: {', '.join(TenantLimits.names())}")
    ddb = client("dynamodb")
    key = {"pk": {"S": f"tenant#{tenant}"}}
    ddb.update_item(
        TableName=_table(),
        Key=key,
        UpdateExpression="SET #l = if_not_exists(#l, :empty)",
        ExpressionAttributeNames={"#l": "limits"},
        ExpressionAttributeValues={":empty": {"M": {}}},
    )
    for name, value in overrides.items():
        names = {"#l": "limits", "#n": name}
        if value is None:
            ddb.update_item(
                TableName=_table(), Key=key, UpdateExpression="REMOVE #l.#n", ExpressionAttributeNames=names
            )
        else:
            ddb.update_item(
                TableName=_table(),
                Key=key,
                UpdateExpression="SET #l.#n = :v",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":v": {"N": str(value)}},
            )
    _cached.pop(tenant, None)
    item = ddb.get_item(TableName=_table(), Key=key, ConsistentRead=True).get("Item")
    return _from_item(item)


def clear_cache() -> None:
    """Forget cached limits (tests)."""
    _cached.clear()
