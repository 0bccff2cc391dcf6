"""A tenant's enqueue rate limit (steady rate + burst), enforced without a store write per enqueue.

Each API instance keeps one token bucket per tenant, sized from the instance's share of the limit:
rate x s and burst x s. Instances learn each other's demand from one shared item per tenant
(shared/store/tenants/counters.py: a map of instance id -> the last second it served the tenant and its demand
since its previous report): an instance writes its entry at most once per second per tenant it serves,
off the request path (except its first: see `_first_sight`), and reads the others' in what the write
returns. So a tenant's enqueue costs no store call, and the store sees one small write per second per
(instance, active tenant).

The share (`share_of`) divides the rate by demand, and every instance's share, computed from one
census, sums to at most 1:
- only demand reported in the last FRESH_SECONDS counts: an instance that served a burst and went quiet
  stops holding the limit within two seconds (it reports only when it serves again);
- each instance's demand counts up to the rate: a burst spends the tenant's burst, it does not claim
  more than the whole steady rate;
- while the tenant's counted demand is under its rate, the headroom is split equally among the n
  instances that served it within COUNTED_SECONDS, so a newly busy instance gets at least
  (1 - demand/rate)/n of the limit however much others asked before.

Accuracy (measured by `python -m bench.models.rate_limit`, docs/benchmark.md): 0.95-1.00 of the limit at
100/s and more, however unevenly requests reach 1-50 instances; less at low rates over many
instances (small buckets overflow: conservative); k instances appearing at once admit about
burst x (1 + 1/2 + ... + 1/k) in their first second. tests/unit/tenants/test_rate_limit.py proves the share's
bounds and the fleet's under interleaved bursts, lulls and routings (hypothesis).

A batch of more jobs than the bucket holds is admitted only into a full bucket and leaves it in
debt: per instance, admitted <= rate x t + max(burst share, largest batch).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from shared import settings
from shared.errors import RateLimited, ReadsLimited
from shared.store.tenants import counters
from shared.tenants import quotas

DIRECTORY_ITEM_SECONDS_KEPT = 3600  # a tenant idle this long loses its directory item (TTL)
# An instance counts as serving the tenant for this long after its last request of the tenant's:
# long enough that instances each seeing the tenant rarely (many instances, a low rate) are all
# counted; short enough that instances gone idle stop shrinking the others' shares within seconds.
COUNTED_SECONDS = 10
# An instance's reported demand counts this long after the second it reported it. A busy instance
# reports at its first request of every second, so its entry is at most a second old; an instance
# that went quiet stops counting after this.
FRESH_SECONDS = 2
STALE_WINDOWS = 60  # an instance silent this many seconds is dropped from the directory
PRUNE_PER_REPORT = 10


@dataclass
class TokenBucket:
    rate: float  # tokens per second
    capacity: float
    tokens: float
    updated: float  # clock reading of the last refill

    def refill(self, now: float) -> None:
        self.tokens = min(self.capacity, self.tokens + max(0.0, now - self.updated) * self.rate)
        self.updated = now

    def resize(self, rate: float, capacity: float, now: float) -> None:
        self.refill(now)
        self.rate, self.capacity = rate, capacity
        self.tokens = min(self.tokens, capacity)

    def take(self, count: int, now: float) -> float:
        """Take `count` tokens: 0.0 if taken, else the seconds until they could be.

        More than the capacity is taken only from a full bucket, which goes into debt.
        """
        self.refill(now)
        needed = min(float(count), self.capacity)
        if self.tokens >= needed:
            self.tokens -= count
            return 0.0
        return (needed - self.tokens) / self.rate if self.rate > 0 else math.inf


@dataclass(frozen=True)
class Census:
    """What a report learns: how many instances served the tenant lately, and their fresh demand."""

    instances: int  # served the tenant within COUNTED_SECONDS
    demands: tuple[float, ...]  # jobs/s asked of each instance that reported within FRESH_SECONDS

    @property
    def demand(self) -> float:
        return sum(self.demands)


class InstanceDirectory(Protocol):
    """Where instances say which tenants they served in a one-second window, and learn how many did."""

    def report(self, tenant: str, instance: str, window: int, demand: float) -> Census:
        """Record that `instance` served the tenant in `window`, asked for `demand` jobs/s since its last report."""
        ...


class DynamoDirectory:
    """One item per tenant in the jobs table: a map of instance id -> the last window it served the
    tenant. One UpdateItem per report, which also drops a few long-gone instances' entries."""

    def report(self, tenant: str, instance: str, window: int, demand: float) -> Census:
        entries = counters.report_rate_window(
            tenant, instance, window, demand, forget=self._gone, expires_at=window + DIRECTORY_ITEM_SECONDS_KEPT
        )
        self._gone = [name for name, (last, _) in entries.items() if last < window - STALE_WINDOWS][:PRUNE_PER_REPORT]
        return census(entries.values(), window)

    def __init__(self) -> None:
        self._gone: list[str] = []  # instances not seen for a while: removed with the next report


def census(entries: Iterable[tuple[int, float]], window: int) -> Census:
    """From (last window, demand) per instance: the instances that served the tenant within
    COUNTED_SECONDS of `window`, and the demands reported within FRESH_SECONDS of it."""
    recent = [(last, demand) for last, demand in entries if last > window - COUNTED_SECONDS]
    return Census(len(recent), tuple(sorted(demand for last, demand in recent if last >= window - FRESH_SECONDS)))


def share_of(demand: float, seen: Census, rate: float) -> float:
    """This instance's part of the tenant's limit, given its own demand (part of `seen`).

    Demands count up to the rate each. Over the rate, the limit is split by demand; under it, each
    instance gets its demand plus an equal part of the headroom. Shares computed from one census sum
    to at most 1, so the fleet admits no more than the limit whatever the instances' views agree on.
    """
    instances = max(1, seen.instances)
    if rate <= 0:
        return 1.0 / instances
    counted = sum(min(other, rate) for other in seen.demands)
    headroom = max(0.0, rate - counted)
    return min(1.0, (min(max(demand, 0.0), rate) + headroom / instances) / max(counted, rate))


@dataclass
class _TenantState:
    bucket: TokenBucket
    instances: int = 1  # serving the tenant, as the last report counted them
    share: float = 1.0  # this instance's part of the limit, as the last report measured it
    asked: int = 0  # jobs asked of this instance since its last report (admitted or not)
    reported_window: int = -1


class RateLimiter:
    """Per-instance token buckets, each sized from the tenant's share of its limit."""

    def __init__(
        self,
        directory: InstanceDirectory | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        instance_id: str | None = None,
        background: bool = True,
    ) -> None:
        self._directory = directory
        self._clock, self._wall_clock = clock, wall_clock
        self.instance_id = instance_id or uuid.uuid4().hex[:12]
        self._reporter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rate-report") if background else None
        self._tenants: dict[str, _TenantState] = {}
        self._lock = threading.Lock()

    def instances(self, tenant: str) -> int:
        """The estimated number of instances serving the tenant (1 until a report says otherwise)."""
        state = self._tenants.get(tenant)
        return state.instances if state else 1

    def admit(self, tenant: str, count: int, rate: float, burst: int) -> None:
        """Admit `count` jobs of the tenant, or raise RateLimited."""
        now = self._clock()
        with self._lock:
            state = self._tenants.get(tenant)
            if state is None:
                state = self._first_sight(tenant, count, rate, burst, now)
            else:
                state.asked += count
                self._report(tenant, state, rate)
            state.bucket.resize(rate * state.share, max(1.0, burst * state.share), now)
            wait = state.bucket.take(count, now)
            if wait > 0:  # a share shrunk by a lull grows back with the next report: wait at least an equal share
                wait *= state.bucket.rate / (rate * max(state.share, 1.0 / state.instances))
        if wait > 0:
            raise RateLimited(max(1, math.ceil(min(wait, 3600.0))), rate, burst)

    def _first_sight(self, tenant: str, count: int, rate: float, burst: int, now: float) -> _TenantState:
        """The tenant's first request on this instance: count the instances before sizing the bucket.

        This report is on the request path, once per tenant per instance lifetime: a fleet scaling
        out for a flood would otherwise give every new instance a whole burst before its first
        background report came back. The k-th instance to appear counts k, so k instances that
        appear at once grant burst x (1 + 1/2 + ... + 1/k) between them (4.5 bursts for 50).
        """
        state = _TenantState(TokenBucket(rate, float(burst), float(burst), now))
        if self._directory is not None:
            state.reported_window = int(self._wall_clock())
            self._record(state, state.reported_window, tenant, count, rate)
        self._tenants[tenant] = state
        return state

    def _report(self, tenant: str, state: _TenantState, rate: float) -> None:
        """Say once per window that this instance serves the tenant (off the request path)."""
        window = int(self._wall_clock())
        if self._directory is None or state.reported_window == window:
            return
        demand = state.asked / max(1, window - state.reported_window)  # jobs/s since the last report
        state.reported_window, state.asked = window, 0
        if self._reporter is None:
            self._record(state, window, tenant, demand, rate)
        else:
            self._reporter.submit(self._record, state, window, tenant, demand, rate)

    def _record(self, state: _TenantState, window: int, tenant: str, demand: float, rate: float) -> None:
        """Report, then size this instance's share (`share_of`): its part of the fresh demand, so that an
        instance Lambda sends most requests to gets most of the limit (equal shares left busy instances
        short while idle ones held tokens)."""
        assert self._directory is not None
        try:
            seen = self._directory.report(tenant, self.instance_id, window, demand)
        except Exception:  # an outage of the directory keeps the last estimate; enqueues go on
            return
        state.instances = max(1, seen.instances)
        state.share = share_of(demand, seen, rate)


_limiter: RateLimiter | None = None


def limiter() -> RateLimiter:
    global _limiter
    if _limiter is None:
        _limiter = RateLimiter(DynamoDirectory())
    return _limiter


def check(tenant: str, count: int = 1) -> None:
    """Admit `count` enqueues for the tenant under its limits, or raise RateLimited."""
    limits = quotas.limits_for(tenant)
    limiter().admit(tenant, count, limits.enqueue_rate_per_second, limits.enqueue_burst)


_heavy_reads: RateLimiter | None = None


def check_heavy_read(tenant: str) -> None:
    """Admit one read of the tenant's whole index (GET /v1/stats, a filtered GET /v1/jobs), or raise
    ReadsLimited. Metered per API instance, with no store call: the aim is to bound what one tenant's
    loop of such reads costs the index every tenant shares, not an exact fleet-wide rate."""
    global _heavy_reads
    if _heavy_reads is None:
        _heavy_reads = RateLimiter(None)
    rate, burst = settings.HEAVY_READS_PER_SECOND, settings.HEAVY_READS_BURST
    try:
        _heavy_reads.admit(tenant, 1, rate, burst)
    except RateLimited as limited:
        raise ReadsLimited(limited.retry_after_seconds, rate, burst) from None


def reset() -> None:
    """Forget every bucket (tests)."""
    global _limiter, _heavy_reads
    _limiter = _heavy_reads = None
