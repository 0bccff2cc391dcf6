"""Report: what GET /v1/jobs/{id} answers."""

from __future__ import annotations

import time
from dataclasses import replace

from shared import ids, settings
from shared.errors import NotFound
from shared.model.record import JobRecord
from shared.model.states import Status
from shared.store.id_secret import id_secret
from shared.store.jobs import job_store

_DAY = 86_400


# job id -> when (time.monotonic()) this instance last read it past the status cache: at most once per
# STATUS_MISS_RECHECK_SECONDS each, so a backlog's polls cost the table a bounded number of reads.
_rechecked: dict[str, float] = {}
_RECHECKED_KEPT = 10_000


class JobNotFound(NotFound):
    """No such job for this tenant: another tenant's job answers exactly the same."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"no job {job_id!r}")


def job_status(tenant: str, job_id: str) -> JobRecord:
    """The job's record; `queued` for a valid id no worker has seen yet; JobNotFound if unknown to this tenant.

    The status cache may answer "no record" after a worker wrote one: DAX keeps a miss (a negative entry)
    for its TTL, and a miss filled on one node just as the worker's write replicated to it can outlive
    the write (docs/decisions/status-cache-staleness.md). So a miss for a job that entered the queue
    more than STATUS_MISS_RECHECK_SECONDS ago is read again from the table itself, at most once per
    STATUS_MISS_RECHECK_SECONDS per id and instance: a stale `queued` lasts that long, not the TTL."""
    found = job_store.get(job_id)
    if found is not None:
        return _owned(found, tenant, job_id)
    info = ids.verify(id_secret(), tenant, job_id)
    if info is None:
        raise JobNotFound(job_id)
    entered = info.due_at if info.due_at is not None else info.minted_at
    if entered is not None and _due_a_recheck(job_id, entered):
        found = job_store.get(job_id, consistent=True)
        if found is not None:
            return _owned(found, tenant, job_id)
    # A message lives MESSAGE_RETENTION_DAYS from when it enters the queue: at enqueue, or when due
    # for a delayed job (a far-future one waits in Scheduler, not in the queue, until then).
    entered_queue = info.due_at if info.due_at is not None else info.minted_at
    if entered_queue is not None and time.time() - entered_queue > settings.MESSAGE_RETENTION_DAYS * _DAY:
        raise JobNotFound(job_id)  # its message would have expired unrun long ago; nothing to report
    return JobRecord(id=job_id, status=Status.QUEUED, enqueued_at=info.minted_at, tenant=tenant)


def _owned(record: JobRecord, tenant: str, job_id: str) -> JobRecord:
    if record.tenant != tenant:
        raise JobNotFound(job_id)
    return with_steps(record)


def with_steps(record: JobRecord) -> JobRecord:
    """A durable job's record with its steps from its journal (one consistent read, without the results); a plain
    job's as it is (its record keeps no journal: nothing read)."""
    if not record.journal:
        return record
    # Imported here: the journal's module loads the step codecs, which no enqueue needs (the API's cold start).
    from shared.store.durable import journal_items

    journal = journal_items.read(record.id, results=False)
    return replace(record, steps=journal.views() if journal is not None else [])


def _due_a_recheck(job_id: str, entered_queue: float) -> bool:
    if time.time() - entered_queue < settings.STATUS_MISS_RECHECK_SECONDS:
        return False  # a worker has most likely not started it yet: the cached miss is the truth
    now = time.monotonic()
    last = _rechecked.get(job_id)
    if last is not None and now - last < settings.STATUS_MISS_RECHECK_SECONDS:
        return False
    if len(_rechecked) >= _RECHECKED_KEPT:
        _rechecked.clear()
    _rechecked[job_id] = now
    return True


def clear_cache() -> None:
    """Forget the rechecks made (tests)."""
    _rechecked.clear()
