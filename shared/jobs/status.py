"""Report: what GET /v1/jobs/{id} answers."""

from __future__ import annotations

import time

from shared import ids, settings
from shared.model import JobRecord, Status
from shared.store import job_store
from shared.store.id_secret import id_secret

_DAY = 86_400


def job_status(tenant: str, job_id: str) -> JobRecord | None:
    """The job's record; `queued` for a valid id no worker has seen yet; None if unknown to this tenant."""
    found = job_store.get(job_id)
    if found is not None:
        return found if found.tenant == tenant else None
    info = ids.verify(id_secret(), tenant, job_id)
    if info is None:
        return None
    # A message lives MESSAGE_RETENTION_DAYS from when it enters the queue: at enqueue, or when due
    # for a delayed job (a far-future one waits in Scheduler, not in the queue, until then).
    entered_queue = info.due_at if info.due_at is not None else info.minted_at
    if entered_queue is not None and time.time() - entered_queue > settings.MESSAGE_RETENTION_DAYS * _DAY:
        return None  # its message would have expired unrun long ago; nothing to report
    return JobRecord(id=job_id, status=Status.QUEUED, enqueued_at=info.minted_at, tenant=tenant)
