"""A unique key at enqueue (docs/decisions/unique-jobs.md): the enqueue of a job with `unique` takes its key's lock
before it sends the job, confirms it once sent, and gives it back if the send failed. Where another job holds the
key, nothing is sent: the answer is that job (`DuplicateOf`). The worker writes no lock: a holder's own record
says whether it still holds the key (shared/store/flow/unique_locks.py).

Cost: a job with a unique key, two small writes at enqueue (the lock's put and its confirm); a duplicate, one
refused put and at most one consistent read of its holder's record. A job without one: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.flow.unique import Unique
from shared.model.states import Status
from shared.store.flow import unique_locks
from shared.store.jobs import job_store


@dataclass(frozen=True)
class DuplicateOf:
    """Another job holds the unique key: the enqueue answers it, and enqueued nothing."""

    id: str


def _status_of(job_id: str) -> Status | None:
    record = job_store.get(job_id, consistent=True)
    return record.status if record is not None else None


def take(tenant: str, unique: Unique, job_id: str, now: float, due_at: float | None = None) -> DuplicateOf | None:
    """Take the key for `job_id` (to be sent next), or the job that holds it."""
    held = unique_locks.acquire(tenant, unique, job_id, now, _status_of, due_at=due_at)
    return DuplicateOf(held.holder) if isinstance(held, unique_locks.Duplicate) else None


def sent(tenant: str, unique: Unique, job_id: str) -> None:
    """The job went out: its lock holds until it starts (or ends), or expires."""
    unique_locks.confirm(tenant, unique.key, job_id)


def not_sent(tenant: str, unique: Unique, job_id: str) -> None:
    """The job's send failed: its key is free at once."""
    unique_locks.release(tenant, unique.key, job_id)
