"""Whose job it is, for cancel and retry: a job's record if it is this tenant's, or what the id of a job
with no record says; JobNotFound otherwise, exactly as for a job that does not exist."""

from __future__ import annotations

from typing import Any

from shared import ids, settings
from shared.jobs.status import JobNotFound
from shared.model.record import JobRecord
from shared.store.id_secret import id_secret
from shared.store.jobs import job_items

_DAY = 86_400


def unrecorded(tenant: str, job_id: str, now: float) -> ids.IdInfo:
    """What the id of a job with no record says, if it is this tenant's; else JobNotFound."""
    info = ids.verify(id_secret(), tenant, job_id)
    if info is None:
        raise JobNotFound(job_id)
    if info.minted_at is not None and now - info.minted_at > settings.MESSAGE_RETENTION_DAYS * _DAY:
        raise JobNotFound(job_id)  # its message expired unrun long ago
    return info


def record(item: dict[str, Any], tenant: str, job_id: str) -> JobRecord:
    if not item or item.get("tenant", {}).get("S") != tenant:
        raise JobNotFound(job_id)
    return job_items.record_from_item(item)
