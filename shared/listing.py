"""Listing a tenant's jobs newest first, from the listing index (gsi2), one bounded page at a time.

The index's partition is the tenant (taken from the API key, never from the request or the
cursor), its sort key `<enqueued ms>#<id>`: a time range is a key condition, status/type/schedule
are filter expressions. DynamoDB applies filters after reading, so a filtered page may hold fewer
than `limit` jobs while more remain; each request reads at most settings.LIST_READ_BUDGET entries.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from shared import settings, store
from shared.model import JobRecord
from shared.table_schema import JOBS_INDEX

NOTE = (
    "Listed: jobs a worker has picked up, and cancelled jobs. A job still waiting in the queue "
    "(just enqueued, delayed, or a retry not yet picked up) has no record yet and is not listed; "
    "GET /v1/jobs/{id} answers `queued` for it."
)
_CURSOR_VERSION = "1"
_SORT_KEY = re.compile(r"\d{13}#[A-Za-z0-9_-]{1,128}")


class InvalidQuery(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class IndexRead:
    items: list[dict[str, Any]]
    next_key: dict[str, Any] | None  # where the next read starts; None: the range is exhausted
    read: int  # index entries read


def read_index(
    tenant: str,
    filters: dict[str, str],
    *,
    since: float | None,
    until: float | None,
    start_after: dict[str, Any] | None,
    want: int,
    attributes: tuple[str, ...] | None = None,
    read_budget: int = settings.LIST_READ_BUDGET,
) -> IndexRead:
    """Up to `want` matching entries newest first, reading at most `read_budget` entries.

    `next_key` is set only when more may match: one entry past `want` was seen (then it points at
    the last one returned), or the budget ran out first (then at the last one read).
    """
    oldest = store.index_sort_key(since or 0, "")
    newest = store.index_sort_key(until, "~") if until is not None else "9" * 14
    found: list[dict[str, Any]] = []
    read = 0
    start = start_after
    while True:
        # Unfiltered, one entry past `want` says whether there is a next page; filtered, read what the budget allows.
        limit = min(want + 1 - len(found), read_budget - read) if not filters else read_budget - read
        page = store.query_jobs_index(
            tenant,
            oldest_sort_key=oldest,
            newest_sort_key=newest,
            start_after=start,
            limit=max(limit, 1),
            filters=filters,
            attributes=attributes and tuple(sorted({*attributes, "pk", JOBS_INDEX.partition_key, JOBS_INDEX.sort_key})),
        )
        read += page.read
        found += page.items
        if len(found) > want:
            return IndexRead(found[:want], store.index_key(found[want - 1]), read)
        if page.last_key is None:
            return IndexRead(found, None, read)
        start = page.last_key
        if read >= read_budget:
            return IndexRead(found, start, read)


def encode_cursor(key: dict[str, Any]) -> str:
    raw = f"{_CURSOR_VERSION}:{key[JOBS_INDEX.sort_key]['S']}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(tenant: str, cursor: str) -> dict[str, Any]:
    """The index position a cursor names, in the caller's own partition (a cursor cannot leave it)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise InvalidQuery("cursor", "not a cursor this API returned; start again without it") from error
    version, _, sort_key = raw.partition(":")
    if version != _CURSOR_VERSION or not _SORT_KEY.fullmatch(sort_key):
        raise InvalidQuery("cursor", "not a cursor this API returned; start again without it")
    job_id = sort_key.split("#", 1)[1]
    return {
        "pk": {"S": f"job#{job_id}"},
        JOBS_INDEX.partition_key: {"S": f"tenant#{tenant}"},
        JOBS_INDEX.sort_key: {"S": sort_key},
    }


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
        raise InvalidQuery("limit", f"must be between 1 and {settings.LIST_MAX_LIMIT}")
    if query.since is not None and query.until is not None and query.until < query.since:
        raise InvalidQuery("until", "must not be before since")
    start_after = decode_cursor(tenant, query.cursor) if query.cursor else None
    if start_after is not None:
        position = start_after[JOBS_INDEX.sort_key]["S"]
        # DynamoDB refuses a start key outside the key condition; say so as the cursor's fault, not a 503.
        if (query.since is not None and position < store.index_sort_key(query.since, "")) or (
            query.until is not None and position > store.index_sort_key(query.until, "~")
        ):
            raise InvalidQuery("cursor", "points outside since/until; pass the same since/until as the first page")
    filters = {
        name: value
        for name, value in (("status", query.status), ("job_type", query.job_type), ("schedule_name", query.schedule))
        if value
    }
    found = read_index(tenant, filters, since=query.since, until=query.until, start_after=start_after, want=query.limit)
    return JobsPage(
        jobs=[store.record_from_item(item) for item in found.items],
        next_cursor=encode_cursor(found.next_key) if found.next_key else None,
        read=found.read,
    )
