"""Unique jobs: while a tenant's job with a unique key waits to start (`"until": "started"`), or until it ends
(`"until": "finished"`), at most `for_seconds`, enqueuing another job with that key answers
`200 {"id": <the existing job's id>, "status": "duplicate"}` and enqueues nothing. After that the key is free
again. Unlike an idempotency key, which names one request for ever, a unique key is a lock that comes free
(Sidekiq Enterprise's unique jobs; docs/decisions/unique-jobs.md).

**The lock** is one item per key, taken by the enqueue that holds it (shared/store/flow/unique_locks.py). It names its
holder, and is free when it expires (`for_seconds`, or the most a job can wait), when its enqueue never confirmed
the job sent, or when **its holder no longer holds it**: a lock's holder is judged by the holder's own record, read
only when another enqueue meets the lock. So the worker never writes a lock: a job that starts or ends frees its
key by what its record says, and a worker that dies or a store that fails cannot leave a key held by a job that
has started or ended.

Pure: the spec, and what frees a key.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared import settings
from shared.errors import InvalidRequest
from shared.flow import limits
from shared.flow.flow_key import checked_key, fields_of, whole_number

_REQUIRED = frozenset({"key", "until"})
_OPTIONAL = frozenset({"for_seconds"})


class Until(StrEnum):
    """How long a job holds its unique key."""

    STARTED = "started"  # while it waits to start (its first claim)
    FINISHED = "finished"  # until it ends: succeeded, dead, cancelled or skipped


@dataclass(frozen=True)
class Unique:
    """While the tenant's job with `key` waits (or runs, `until` finished), at most `for_seconds`, no other job with
    `key` is enqueued."""

    key: str
    until: Until
    for_seconds: int | None = None

    def to_dict(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"key": self.key, "until": str(self.until)}
        if self.for_seconds is not None:
            spec["for_seconds"] = self.for_seconds
        return spec

    @classmethod
    def parse(cls, value: Any, field: str = "unique") -> Unique:
        """A body's `unique` (or a type's, whose key names a payload field); InvalidRequest naming the field."""
        fields = fields_of(value, field, _REQUIRED, _OPTIONAL)
        if fields["until"] not in tuple(Until):
            raise InvalidRequest(f"{field}.until", f"must be one of {', '.join(Until)}")
        most = fields.get("for_seconds")
        if most is not None:
            most = whole_number(most, f"{field}.for_seconds", 1, limits.UNIQUE_MAX_FOR_SECONDS)
        return cls(key=checked_key(fields["key"], f"{field}.key"), until=Until(fields["until"]), for_seconds=most)

    def expires_at(self, now: float, due_at: float | None = None) -> float:
        """When the lock of a job enqueued at `now` (due at `due_at`, if later) is free whatever its holder does:
        after `for_seconds`, at most the queue's retention past its due time, after which no message of its can be
        waiting. A key is never held for ever, even by a job that neither starts nor ends."""
        most = max(due_at or now, now) + settings.MESSAGE_RETENTION_DAYS * 86_400
        return most if self.for_seconds is None else min(now + self.for_seconds, most)


def still_holds(until: Until, *, started: bool, finished: bool) -> bool:
    """Whether a lock's holder still holds its key, by its record: one that has not started holds any lock (no
    record, or `queued` or `waiting`: it waits); one that started holds it only `until` finished, and not once it
    has ended."""
    if finished:
        return False
    return not started or until is Until.FINISHED


def duplicate_reason(key: str, holder: str) -> str:
    """Why a job a schedule's firing (or an event) would have started was recorded `skipped` instead."""
    return f"unique: key {key!r} is held by job {holder}"
