"""Far-future jobs: due beyond SQS's longest delay, each waits as its own one-time Scheduler schedule.

Each holds one unit of its tenant's `max_far_future_jobs` quota, from enqueue until its message
reaches a worker (the schedule fired and deleted itself) or it is cancelled. The unit is a hold
item (shared/store/tenants/counters.py), written in one transaction with the tenant's counter and deleted in one
transaction with the give-back, so whichever of the firing and a cancel comes first gives it back
and the other finds nothing to give: exactly once. The same idempotency key enqueued twice finds
the hold there and takes nothing.
"""

from __future__ import annotations

from typing import Any

from shared.model.message import JobMessage
from shared.store.tenants import counters
from shared.tenants import quotas


def hold(tenant: str, job_id: str, due_at: float) -> bool:
    """Take a unit for the job. False if it holds one already; QuotaExceeded at the limit."""
    return quotas.take(tenant, quotas.FAR_FUTURE_JOBS, counters.hold_item(tenant, job_id, due_at))


def release(tenant: str, job_id: str, *, single_attempt: bool = False) -> bool:
    """Give the job's unit back; False if it had none (given back already, or never far-future)."""
    return quotas.give_back(
        tenant, quotas.FAR_FUTURE_JOBS, counters.hold_item_key(job_id), single_attempt=single_attempt
    )


def arrived(message: JobMessage, *, single_attempt: bool = False) -> bool:
    """The worker's hook: a far-future job's message reached the queue, so its unit comes back.

    Only messages that waited as a one-time schedule carry `due_at`, so only they cost a write; a
    later delivery of the same job finds no hold. (Not the id: an idempotency key's id has no times.)
    """
    if message.due_at is None:
        return False
    return release(message.tenant, message.id, single_attempt=single_attempt)


def held(tenant: str) -> list[dict[str, Any]]:
    """The tenant's holds, soonest due first: [{"job_id", "due_at"}]."""
    return counters.holds(tenant)
