"""Recount what a tenant holds against its quotas, from the items the counters stand for.

The counters move only in transactions with their items (shared/tenants/quotas.py), so they drift only
when something outside those transactions removes an item: a schedule record or hold deleted by
hand, records from before counting began, or a far-future job whose schedule fired but whose
message never reached a worker (Scheduler gave up on it and put it in the DLQ). A recount sets the
counters to the items found; with `prune`, it first gives back the holds whose schedule is gone
although they are long past due.

First it finishes the tenant's schedule records left `creating` or `deleting` by requests that died
(their schedule, record and unit go) or left `updating` (`repair_schedules`), and deletes the tenant's
Scheduler schedules that have no record, so the count is of schedules that fire.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from botocore.exceptions import ClientError

from shared import environment, settings
from shared.aws import eventbridge
from shared.aws.clients import client, is_not_found
from shared.jobs import far_future
from shared.jobs.enqueue import delayed_schedule_name
from shared.schedules import lifecycle, queries
from shared.store.flow import trigger_items
from shared.store.schedules import schedule_items
from shared.tenants import quotas

# A hold this long past due whose schedule is gone belongs to a firing that never arrived (Scheduler
# retries a delivery for at most SCHEDULER_MAX_EVENT_AGE_SECONDS before it dead-letters it).
STALE_AFTER_SECONDS = settings.SCHEDULER_MAX_EVENT_AGE_SECONDS + 3600


@dataclass(frozen=True)
class Recount:
    before: dict[str, int]
    after: dict[str, int]
    pruned: list[str]  # job ids whose stale holds were given back
    schedules_repaired: list[str] = field(default_factory=list)  # half-done schedules finished, as deletes


def _schedule_exists(job_id: str) -> bool:
    try:
        client("scheduler").get_schedule(
            Name=delayed_schedule_name(job_id), GroupName=environment.current().schedule_group
        )
    except ClientError as error:
        if is_not_found(error):
            return False
        raise
    return True


def scheduler_names_left(tenant: str) -> list[str]:
    """Scheduler schedules of the tenant's prefix with no record (left by code older than the records' states)."""
    prefix = lifecycle.scheduler_name(tenant, "")
    recorded = {lifecycle.scheduler_name(tenant, item.name) for item in queries.list_for(tenant)}
    return [found for found in eventbridge.names_with_prefix(prefix) if found not in recorded]


def repair_schedules(tenant: str) -> list[str]:
    """Finish the tenant's records left `creating`, `updating` or `deleting` by requests that died, and delete
    its Scheduler schedules that have no record. The names of what it removed or updated."""
    repaired = [
        item.name
        for item in queries.list_for(tenant)
        if (lifecycle.is_stale(item) and lifecycle.finish_stale(tenant, item.name))
        or (lifecycle.is_stale_update(item) and lifecycle.finish_stale_update(tenant, item.name))
    ]
    prefix = lifecycle.scheduler_name(tenant, "")
    for left in scheduler_names_left(tenant):
        if schedule_items.get(tenant, left.removeprefix(prefix)) is None:  # not recorded since it was listed
            eventbridge.delete(left)
            repaired.append(left)
    return repaired


def recount(tenant: str, *, prune: bool = False, now: float | None = None) -> Recount:
    """Set the tenant's counters to the schedules and far-future holds it has. Run it while the tenant
    is quiet: a unit taken or given back between the count and the write would be overwritten."""
    now = time.time() if now is None else now
    before = quotas.usage(tenant)
    repaired = repair_schedules(tenant)
    pruned: list[str] = []
    holds = far_future.held(tenant)
    if prune:
        for hold in holds:
            if hold["due_at"] < now - STALE_AFTER_SECONDS and not _schedule_exists(hold["job_id"]):
                far_future.release(tenant, hold["job_id"])
                pruned.append(hold["job_id"])
    schedules = schedule_items.list_all(tenant)
    after = {
        quotas.SCHEDULES.counter: len(schedules),
        quotas.FAR_FUTURE_JOBS.counter: len(holds) - len(pruned),
        # What each record holds of the firings budget (a record older than the budget holds none until
        # its next update: it is counted as it holds, so a later delete gives back exactly that).
        quotas.FIRINGS.counter: sum(record.held for record in schedules),
        quotas.TRIGGERS.counter: trigger_items.count(tenant),
        # Durable jobs' waits: their holds have no index to count them by, so the count stands as it is.
        quotas.WAITING_JOBS.counter: before[quotas.WAITING_JOBS.counter],
    }
    quotas.set_usage(tenant, after)
    return Recount(before=before, after=after, pruned=pruned, schedules_repaired=repaired)
