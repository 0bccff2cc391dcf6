"""A tenant's limits and what it holds against them.

Limits: defaults in shared/settings.py, overrides per tenant set by an operator. Overrides live on
the tenant's item (shared/store/tenants/tenant_items.py) so the API reads them with one GetItem per tenant
per instance per TENANT_LIMITS_CACHE_SECONDS.

Usage: one item per tenant (shared/store/tenants/counters.py) with a counter per quota. A unit is taken in one
transaction with the item it stands for (a schedule's record, a far-future job's hold): the
counter's conditional ADD refuses a unit beyond the limit, and the item's own condition refuses a
duplicate. A unit is given back in one transaction with that item's conditional delete, so of two
racing give-backs (a job that fires while it is cancelled) exactly one counts. The counter is
therefore always the number of those items: concurrent requests never overshoot the limit.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import settings
from shared.errors import QuotaExceeded
from shared.refresh import Refresher
from shared.store.tenants import counters, tenant_items


@dataclass(frozen=True)
class TenantLimits:
    max_schedules: int = settings.TENANT_MAX_SCHEDULES
    max_far_future_jobs: int = settings.TENANT_MAX_FAR_FUTURE_JOBS
    max_waiting_jobs: int = settings.TENANT_MAX_WAITING_JOBS
    max_firings_per_minute: int = settings.TENANT_MAX_FIRINGS_PER_MINUTE
    enqueue_rate_per_second: float = settings.TENANT_ENQUEUE_RATE_PER_SECOND
    enqueue_burst: int = settings.TENANT_ENQUEUE_BURST
    max_running: int = settings.TENANT_MAX_RUNNING  # 0: no cap
    max_triggers: int = settings.TENANT_MAX_TRIGGERS

    @classmethod
    def names(cls) -> list[str]:
        return [field.name for field in dataclasses.fields(cls)]


DEFAULTS = TenantLimits()


@dataclass(frozen=True)
class Quota:
    """Something a tenant holds a bounded amount of: `counter` on its usage item, bounded by `limit_name`."""

    counter: str
    limit_name: str
    noun: str  # how a message names it: "schedule quota reached: ..."
    # Counter units per unit of the limit: the firings budget counts firings per hour against a limit
    # of firings per minute, so that every schedule's weight is a whole number.
    scale: int = 1


SCHEDULES = Quota(counter="schedules", limit_name="max_schedules", noun="schedule")
FAR_FUTURE_JOBS = Quota(counter="far_future_jobs", limit_name="max_far_future_jobs", noun="far-future job")
# Recurring firings: each schedule weighs the most firings it makes in an hour (rate(1 minute): 60).
FIRINGS = Quota(
    counter="firings_per_hour", limit_name="max_firings_per_minute", noun="firings-per-minute budget", scale=60
)
TRIGGERS = Quota(counter="triggers", limit_name="max_triggers", noun="trigger")
# Durable jobs waiting beyond SQS's 15-minute delay, or for a child (shared/waits/quota.py).
WAITING_JOBS = Quota(counter="waiting_jobs", limit_name="max_waiting_jobs", noun="waiting job")
QUOTAS = (SCHEDULES, FAR_FUTURE_JOBS, FIRINGS, TRIGGERS, WAITING_JOBS)


_cached: dict[str, tuple[TenantLimits, float]] = {}


def _with_overrides(overrides: dict[str, float]) -> TenantLimits:
    values: dict[str, Any] = {}
    for field in dataclasses.fields(TenantLimits):
        if field.name in overrides:
            number = overrides[field.name]
            values[field.name] = float(number) if field.type in ("float", float) else int(number)
    return dataclasses.replace(DEFAULTS, **values)


def overrides_of(tenant: str) -> dict[str, float | int]:
    """Only the limits an operator set for this tenant (read now, not cached)."""
    overridden = tenant_items.limit_overrides(tenant, consistent=True)
    limits = _with_overrides(overridden)
    return {name: getattr(limits, name) for name in TenantLimits.names() if name in overridden}


_rereads = Refresher("tenant-limits")


def limits_for(tenant: str) -> TenantLimits:
    """The tenant's limits, read at most once per TENANT_LIMITS_CACHE_SECONDS per instance.

    Once read, they are answered from the cache and re-read in the background when their time runs
    out (shared/refresh.py): a store blip must not slow or fail enqueues, which never touch the store
    otherwise, nor a worker's batch. A tenant this instance has not read yet while the store fails
    gets the defaults, after one attempt: retried, a throttled read held a batch's start for seconds.
    """
    cached = _cached.get(tenant)
    if cached is not None:
        if cached[1] <= time.monotonic():
            _rereads.start(tenant, lambda: _read_limits(tenant))
        return cached[0]
    try:
        return _read_limits(tenant, single_attempt=True)
    except (ClientError, BotoCoreError):
        _cached[tenant] = (DEFAULTS, 0.0)  # served from now on, and re-read in the background
        return DEFAULTS


def _read_limits(tenant: str, *, single_attempt: bool = False) -> TenantLimits:
    limits = _with_overrides(tenant_items.limit_overrides(tenant, single_attempt=single_attempt))
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
    tenant_items.set_limit_overrides(tenant, overrides)
    _cached.pop(tenant, None)
    return _with_overrides(tenant_items.limit_overrides(tenant, consistent=True))


def clear_cache() -> None:
    """Forget cached limits (tests)."""
    _cached.clear()


# Usage ----------------------------------------------------------------------------------------------


def usage(tenant: str) -> dict[str, int]:
    """What the tenant holds now, per quota counter (a consistent read)."""
    return counters.usage(tenant, tuple(quota.counter for quota in QUOTAS))


def _limit_of(tenant: str, quota: Quota) -> int:
    """The quota's limit for the tenant, in counter units."""
    return int(getattr(limits_for(tenant), quota.limit_name)) * quota.scale


def _exceeded(tenant: str, quota: Quota, amount: int) -> QuotaExceeded:
    held = usage(tenant)[quota.counter]
    limit = _limit_of(tenant, quota)
    if quota.scale == 1:
        return QuotaExceeded(quota.noun, quota.limit_name, limit, held, amount)
    return QuotaExceeded(quota.noun, quota.limit_name, limit / quota.scale, held / quota.scale, amount / quota.scale)


def _units(tenant: str, amounts: Mapping[Quota, int]) -> dict[str, counters.Units]:
    """The amounts as counters.Units; QuotaExceeded (403) for one no amount of holding less lets through."""
    units = {}
    for quota, amount in amounts.items():
        limit = _limit_of(tenant, quota)
        if amount > 0 and amount > limit:
            raise _exceeded(tenant, quota, amount)
        units[quota.counter] = counters.Units(amount, limit)
    return units


def _which(tenant: str, amounts: Mapping[Quota, int]) -> QuotaExceeded:
    """The quota a refused take would have passed (the first, read now), as QuotaExceeded."""
    held = usage(tenant)
    for quota, amount in amounts.items():
        if amount > 0 and held[quota.counter] + amount > _limit_of(tenant, quota):
            return _exceeded(tenant, quota, amount)
    quota, amount = next(iter(amounts.items()))  # given back meanwhile: report the first
    return _exceeded(tenant, quota, amount)


def take(tenant: str, quota: Quota, item: dict[str, Any]) -> bool:
    """Take one unit of `quota` for `item` (a new item, written in the same transaction).

    Returns False, taking nothing, if an item with that key exists already (a duplicate).
    Raises QuotaExceeded if the tenant holds its limit already.
    """
    return take_units(tenant, {quota: 1}, item)


def take_units(tenant: str, amounts: Mapping[Quota, int], item: dict[str, Any]) -> bool:
    """Take `amounts` of their quotas for `item` (a new item, written in the same transaction): all or none.

    False, taking nothing, if an item with that key exists already; QuotaExceeded naming the quota an
    amount would pass (429; 403 if the amount alone is over the limit)."""
    taken = counters.take(tenant, _units(tenant, amounts), item)
    if taken is counters.Take.AT_LIMIT:
        raise _which(tenant, amounts)
    return taken is counters.Take.TAKEN


def move_units(tenant: str, amounts: Mapping[Quota, int], item_update: dict[str, Any]) -> bool:
    """Apply `item_update` (a conditional update of an item holding units) and add `amounts` (negative: give
    back) to their quotas, in one transaction. False if the item's condition failed (nothing changed);
    QuotaExceeded if an amount would pass its quota."""
    moved = counters.move(tenant, _units(tenant, amounts), item_update)
    if moved is counters.Move.AT_LIMIT:
        raise _which(tenant, amounts)
    return moved is counters.Move.MOVED


def give_back(
    tenant: str,
    quota: Quota,
    key: dict[str, Any],
    *,
    single_attempt: bool = False,
    only_if: counters.Condition | None = None,
) -> bool:
    """Delete the item `key` and give its unit back, in one transaction. False if it was gone already,
    or fails `only_if` (a further condition on the item: schedule_items.held_by).

    `single_attempt`: no botocore retries, for a caller that gives it back later if the store fails."""
    return give_back_units(tenant, {quota: 1}, key, single_attempt=single_attempt, only_if=only_if)


def give_back_units(
    tenant: str,
    amounts: Mapping[Quota, int],
    key: dict[str, Any],
    *,
    single_attempt: bool = False,
    only_if: counters.Condition | None = None,
) -> bool:
    """`give_back`, of `amounts` of their quotas (a schedule: one of max_schedules and its firings held)."""
    given = {quota.counter: amount for quota, amount in amounts.items()}
    return counters.give_back(tenant, given, key, single_attempt=single_attempt, only_if=only_if)


def set_usage(tenant: str, counts: dict[str, int]) -> None:
    """Overwrite the tenant's counters (a recount's result)."""
    counters.set_usage(tenant, counts)
