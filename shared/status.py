"""Report: what GET /v1/jobs/{id} answers."""

from __future__ import annotations

import time

from shared import ids, settings, store
from shared.model import JobRecord, Status
from shared.signing import id_secret

_DAY = 86_400


def job_status(tenant: str, job_id: str) -> JobRecord | None:
    """The job's record; `queued` for a valid id no worker has seen yet; None if unknown to this tenant."""
    found = store.get(job_id)
    if found is not None:
        record, owner = found
        return record if owner == tenant else None
    info = ids.verify(id_secret(), tenant, job_id)
    if info is None:
        return None
    if info.minted_at is not None and time.time() - info.minted_at > settings.MESSAGE_RETENTION_DAYS * _DAY:
        return None  # its message would have expired unrun long ago; nothing to report
    return JobRecord(id=job_id, status=Status.QUEUED, enqueued_at=info.minted_at)
