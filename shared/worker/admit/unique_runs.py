"""A schedule's run with a unique key, at the worker: before its claim it takes its key's lock, or, where another
job holds the key, it is recorded `skipped` (no attempt, its reason naming the holder) and acknowledged. See
docs/decisions/unique-jobs.md.

Its message comes from Scheduler, not from the API that takes a job's key at enqueue, so the worker takes it: one
conditional put, marked sent (the run is on the queue already, so no confirm follows). A delivery that comes again
retakes its own lock (the same job id). Whether a holder still holds the key is its own record, as at enqueue.

While the store fails, the run is handed back, never run unclaimed: without its lock it could run beside its
key's holder.
"""

from __future__ import annotations

import time

from shared.flow.unique import Unique, duplicate_reason
from shared.model.message import JobMessage
from shared.model.states import Status
from shared.store.flow import unique_locks
from shared.store.jobs import job_store
from shared.worker.admit import store_gate
from shared.worker.batch import Batch
from shared.worker.delivery import Delivery
from shared.worker.verdicts import Verdict


def _status_of(job_id: str) -> Status | None:
    record = job_store.get(job_id, consistent=True, single_attempt=True)
    return record.status if record is not None else None


def judge(message: JobMessage, delivery: Delivery, batch: Batch) -> Verdict | None:
    """None: the run holds its key (or has none) and is claimed as any job. Else it ends `skipped`, or waits for
    the store."""
    unique = message.unique
    if unique is None:
        return None
    return store_gate.decided(
        delivery,
        batch,
        lambda: _take(message, unique),
        cannot="its unique key cannot be taken",
        doing="taking its unique key",
    )


def _take(message: JobMessage, unique: Unique) -> Verdict | None:
    now = time.time()
    held = unique_locks.acquire(message.tenant, unique, message.id, now, _status_of, sent=True, single_attempt=True)
    if isinstance(held, unique_locks.Acquired):
        return None
    reason = duplicate_reason(unique.key, held.holder)
    if job_store.record_skipped(message, reason, held.holder, now, single_attempt=True):
        return store_gate.skipped(message)
    return None  # it has a record already: its claim answers what it is
