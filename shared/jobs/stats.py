"""A tenant's figures, computed from its job records on the listing index (gsi2), bounded per request.

Source: the store, not CloudWatch. The records hold per job what the figures need (status,
enqueued_at, first_started_at, finished_at), per tenant, and one Query reads them in time order;
CloudWatch's metrics (EMF, shared/aws/metrics.py) are per deployment, not per tenant. A request reads
at most settings.STATS_MAX_RECORDS records, newest first: beyond that the figures describe the
newest records only and `sampled` says so.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared import settings
from shared.errors import InvalidRequest
from shared.jobs import listing
from shared.model.states import Status

_HOUR = 3_600
_ATTRIBUTES = ("status", "attempts", "enqueued_at", "started_at", "first_started_at", "finished_at")


def _minute(epoch: float) -> int:
    return int(epoch // 60 * 60)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _percentile(sorted_values: list[float], fraction: float) -> float | None:
    """Nearest rank: the smallest value with at least `fraction` of the values at or below it."""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(fraction * len(sorted_values)) - 1)]


def _number(item: dict[str, Any], name: str) -> float | None:
    return float(item[name]["N"]) if name in item else None


@dataclass(frozen=True)
class Stats:
    window_seconds: int
    counts: dict[str, int]
    per_minute: list[dict[str, Any]]
    enqueue_to_run_ms: dict[str, float | int | None]
    records_read: int
    sampled: bool

    def public(self) -> dict[str, Any]:
        return {
            "window_seconds": self.window_seconds,
            "counts": self.counts,
            "per_minute": self.per_minute,
            "enqueue_to_run_ms": self.enqueue_to_run_ms,
            "records_read": self.records_read,
            "sampled": self.sampled,
            "source": (
                f"the job store: this tenant's job records enqueued in the last {max(self.window_seconds, _HOUR)} s "
                f"(listing index gsi2, newest first, at most {settings.STATS_MAX_RECORDS} read"
                f"{'; more exist, so these figures are of the newest ones' if self.sampled else ''}). "
                "Jobs no worker has picked up yet have no record and are not counted. per_minute: enqueued by "
                "enqueued_at, succeeded/dead by finished_at, failed = jobs now waiting for a retry, by the start of "
                "their failed attempt. enqueue_to_run_ms: first attempt's start minus enqueued_at, delays included."
            ),
        }


_recent: dict[tuple[str, int], tuple[float, Stats]] = {}  # (tenant, window) -> (monotonic time read, figures)


def recent_tenant_stats(tenant: str, window_seconds: int, on_read: Callable[[], None]) -> Stats:
    """The tenant's stats as read within STATS_CACHE_SECONDS by this instance, else read now (after
    `on_read`, which may refuse the read): a dashboard and a script polling together cost one read."""
    found = _recent.get((tenant, window_seconds))
    if found is not None and time.monotonic() - found[0] < settings.STATS_CACHE_SECONDS:
        return found[1]
    on_read()
    figures = tenant_stats(tenant, window_seconds)
    if len(_recent) > 1_000:  # stale entries of tenants gone quiet
        _recent.clear()
    _recent[(tenant, window_seconds)] = (time.monotonic(), figures)
    return figures


def clear_cache() -> None:
    """Forget the figures read (tests)."""
    _recent.clear()


def tenant_stats(tenant: str, window_seconds: int, now: float | None = None) -> Stats:
    now = time.time() if now is None else now
    if not 1 <= window_seconds <= settings.STATS_MAX_WINDOW_SECONDS:
        raise InvalidRequest("window_seconds", f"must be between 1 and {settings.STATS_MAX_WINDOW_SECONDS}")
    since = now - max(window_seconds, _HOUR)  # per_minute always covers the last hour
    found = listing.read_index(
        tenant,
        {},
        since=since,
        until=now,
        before=None,
        want=settings.STATS_MAX_RECORDS,
        attributes=_ATTRIBUTES,
        read_budget=settings.STATS_MAX_RECORDS + 1,
    )
    counts: Counter[str] = Counter({str(status): 0 for status in Status})
    first_hour = _minute(now) - _HOUR + 60
    minutes = {start: Counter[str]() for start in range(first_hour, _minute(now) + 60, 60)}
    waits: list[float] = []
    for item in found.items:
        status = item["status"]["S"]
        enqueued_at = _number(item, "enqueued_at")
        if enqueued_at is None:
            continue
        if enqueued_at >= now - window_seconds:
            counts[status] += 1
            first_started_at = _number(item, "first_started_at")
            if first_started_at is not None:
                waits.append(max(0.0, first_started_at - enqueued_at) * 1000)
        if _minute(enqueued_at) in minutes:
            minutes[_minute(enqueued_at)]["enqueued"] += 1
        finished_at = _number(item, "finished_at")
        if status in (Status.SUCCEEDED, Status.DEAD) and finished_at and _minute(finished_at) in minutes:
            minutes[_minute(finished_at)][status] += 1
        started_at = _number(item, "started_at")
        if status == Status.FAILED and started_at and _minute(started_at) in minutes:
            minutes[_minute(started_at)]["failed"] += 1
    waits.sort()
    per_minute = [
        {"minute": _iso(start)} | {name: tally[name] for name in ("enqueued", "succeeded", "failed", "dead")}
        for start, tally in minutes.items()
    ]
    return Stats(
        window_seconds=window_seconds,
        counts=dict(counts),
        per_minute=per_minute,
        enqueue_to_run_ms={
            "p50": _round(_percentile(waits, 0.50)),
            "p99": _round(_percentile(waits, 0.99)),
            "count": len(waits),
        },
        records_read=len(found.items),
        sampled=found.next_before is not None,
    )


def _round(value: float | None) -> float | None:
    return round(value, 1) if value is not None else None
