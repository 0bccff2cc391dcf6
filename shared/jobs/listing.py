"""Listing a tenant's jobs newest first, from the listing index (gsi2), one bounded page at a time.

The index's partitions are the tenant's (taken from the API key, never from the request or the
cursor; settings.JOBS_INDEX_SHARDS of them, merged newest first), its sort key `<enqueued ms>#<id>`:
a time range and the cursor are key conditions, status/type/schedule are filter expressions.
DynamoDB applies filters after reading, so a filtered page may hold fewer than `limit` jobs while
more remain; each request reads at most settings.LIST_READ_BUDGET entries.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from shared import cursors, settings
from shared.errors import InvalidRequest
from shared.model.record import JobRecord
from shared.store.jobs import job_index, job_items
from shared.store.table_schema import JOBS_INDEX

NOTE = (
    "Listed: jobs a worker has picked up, and cancelled jobs. A job still waiting in the queue "
    "(just enqueued, delayed, or a retry not yet picked up) has no record yet and is not listed; "
    "GET /v1/jobs/{id} answers `queued` for it."
)
# The tenant's index partitions are queried side by side: a page costs about one round trip.
_readers = ThreadPoolExecutor(max_workers=16, thread_name_prefix="list")
_SORT_KEY = re.compile(r"\d{13}#[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True)
class IndexRead:
    items: list[dict[str, Any]]
    next_before: str | None  # the sort key the next read continues below; None: the range is exhausted
    read: int  # index entries read


@dataclass
class _Shard:
    """One of the tenant's index partitions, read newest first a page at a time."""

    number: int
    buffer: deque[dict[str, Any]] = field(default_factory=deque)
    start_after: dict[str, Any] | None = None
    exhausted: bool = False
    frontier: str | None = None  # sort key of the oldest entry read so far (all newer ones are read)

    @property
    def hungry(self) -> bool:
        return not self.buffer and not self.exhausted


Fetch = Callable[[int, dict[str, Any] | None, int], job_index.IndexPage]


def merge_newest(fetch: Fetch, shards: int, *, want: int, read_budget: int, page_size: int) -> IndexRead:
    """The `want` newest entries across `shards` partitions each sorted newest first, reading at most
    about `read_budget` entries: a k-way merge that takes an entry only once every partition not yet
    exhausted has an entry buffered, so no newer one can still be unread.

    `next_before` is set only when more may remain: one entry past `want` was seen (then it is the last
    one returned), or the budget ran out (then it is the newest point below which a partition is unread,
    and everything at or above it has been returned).
    """
    parts = [_Shard(number) for number in range(shards)]
    read = 0

    def refill(hungry: list[_Shard]) -> None:
        nonlocal read
        # At least 2: a page continuing below a cursor may first read the cursor's own entry.
        limit = max(2, min(page_size, (read_budget - read) // len(hungry)))
        for part, page in zip(
            hungry, _readers.map(lambda p: fetch(p.number, p.start_after, limit), hungry), strict=True
        ):
            read += page.read
            part.buffer.extend(page.items)
            part.start_after = page.last_key
            part.exhausted = page.last_key is None
            if page.last_key is not None:
                part.frontier = page.last_key[JOBS_INDEX.sort_key]["S"]

    taken: list[dict[str, Any]] = []
    while len(taken) <= want:
        hungry = [part for part in parts if part.hungry]
        if hungry:
            if read >= read_budget:
                return _budget_spent(parts, taken, want, read)
            refill(hungry)
            continue
        heads = [part for part in parts if part.buffer]
        if not heads:
            return IndexRead(taken, None, read)
        newest = max(heads, key=lambda part: part.buffer[0][JOBS_INDEX.sort_key]["S"])
        taken.append(newest.buffer.popleft())
    return IndexRead(taken[:want], _sort_key(taken[want - 1]), read)


def _sort_key(item: dict[str, Any]) -> str:
    return item[JOBS_INDEX.sort_key]["S"]


def _budget_spent(parts: list[_Shard], taken: list[dict[str, Any]], want: int, read: int) -> IndexRead:
    """Return what is certain: every buffered entry at or above the newest unread point, in order."""
    below = max(part.frontier or "" for part in parts if not part.exhausted)
    certain = sorted(
        (item for part in parts for item in part.buffer if _sort_key(item) >= below), key=_sort_key, reverse=True
    )
    taken += certain
    if len(taken) > want:
        return IndexRead(taken[:want], _sort_key(taken[want - 1]), read)
    return IndexRead(taken, below, read)


def read_index(
    tenant: str,
    filters: dict[str, str],
    *,
    since: float | None,
    until: float | None,
    before: str | None,
    want: int,
    attributes: tuple[str, ...] | None = None,
    read_budget: int | None = None,
) -> IndexRead:
    """Up to `want` of the tenant's matching entries newest first, enqueued in [since, until] and
    below the sort key `before` (a cursor), reading at most `read_budget` entries."""
    budget = read_budget or settings.LIST_READ_BUDGET
    shards = settings.JOBS_INDEX_SHARDS
    oldest = job_items.index_sort_key(since or 0, "")
    newest = job_items.index_sort_key(until, "~") if until is not None else "9" * 14
    if before is not None:
        newest = min(newest, before)  # inclusive in the key condition; `before` itself is dropped below
    if oldest > newest:  # an empty range (e.g. `since` after now): DynamoDB refuses BETWEEN on it
        return IndexRead(items=[], next_before=None, read=0)
    projected = attributes and tuple(sorted({*attributes, "pk", JOBS_INDEX.sort_key}))

    def fetch(shard: int, start_after: dict[str, Any] | None, limit: int) -> job_index.IndexPage:
        page = job_index.query_jobs_index(
            tenant,
            shard,
            oldest_sort_key=oldest,
            newest_sort_key=newest,
            start_after=start_after,
            limit=limit,
            filters=filters,
            attributes=projected,
        )
        if before is not None:
            page = job_index.IndexPage([i for i in page.items if _sort_key(i) != before], page.last_key, page.read)
        return page

    # Unfiltered, each partition's share of `want` and a little more; filtered, the budget spread evenly.
    page_size = want // shards + 2 if not filters else max(budget // shards, 1)
    return merge_newest(fetch, shards, want=want, read_budget=budget, page_size=page_size)


# A cursor names the index position (a sort key) the next page continues below: never a tenant.
_CURSORS = cursors.Codec("1", _SORT_KEY)
encode_cursor = _CURSORS.encode
decode_cursor = _CURSORS.decode


@dataclass(frozen=True)
class JobsQuery:
    status: str | None = None
    job_type: str | None = None
    schedule: str | None = None
    since: float | None = None  # epoch seconds, enqueued at or after
    until: float | None = None  # epoch seconds, enqueued at or before
    limit: int = settings.LIST_DEFAULT_LIMIT
    cursor: str | None = None


@dataclass(frozen=True)
class JobsPage:
    jobs: list[JobRecord]
    next_cursor: str | None
    read: int


def list_jobs(tenant: str, query: JobsQuery) -> JobsPage:
    if not 1 <= query.limit <= settings.LIST_MAX_LIMIT:
        raise InvalidRequest("limit", f"must be between 1 and {settings.LIST_MAX_LIMIT}")
    if query.since is not None and query.until is not None and query.until < query.since:
        raise InvalidRequest("until", "must not be before since")
    before = decode_cursor(query.cursor) if query.cursor else None
    # DynamoDB refuses a key condition whose range is empty; say so as the cursor's fault, not a 503.
    if before is not None and query.since is not None and before < job_items.index_sort_key(query.since, ""):
        raise InvalidRequest("cursor", "points before since; pass the same since/until as on the first page")
    filters = {
        name: value
        for name, value in (("status", query.status), ("job_type", query.job_type), ("schedule_name", query.schedule))
        if value
    }
    found = read_index(tenant, filters, since=query.since, until=query.until, before=before, want=query.limit)
    return JobsPage(
        jobs=[job_items.record_from_item(item) for item in found.items],
        next_cursor=encode_cursor(found.next_before) if found.next_before else None,
        read=found.read,
    )
