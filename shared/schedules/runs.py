"""A schedule's runs: the jobs its firings, its manual triggers and its backfills became.

A firing's run is put on the queue by EventBridge Scheduler itself (shared/schedules/customer_schedules.py);
a trigger's and a backfill's by the API, here, as the same job message the firing would carry, marked with
what started it. Whatever started it, a run of a schedule that skips overlaps is checked at its claim
(shared/store/schedule_runs.py), and a trigger is checked here first, so its answer can say "skipped".
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared import ids, settings
from shared.aws import queue
from shared.jobs.enqueue import check_job
from shared.model import JobMessage, JobSpec, Overlap, Status, Trigger, format_scheduled_time
from shared.schedules import customer_schedules
from shared.store import job_store, schedule_runs
from shared.store.id_secret import id_secret
from shared.tenants import rate_limit


@dataclass(frozen=True)
class Triggered:
    """A trigger's answer: its run, queued or skipped (`reason` says why)."""

    id: str
    status: Status
    reason: str | None = None


def _run_message(
    tenant: str, name: str, job: dict[str, Any], *, job_id: str, scheduled_for: str, overlap: Overlap, trigger: Trigger
) -> JobMessage:
    spec = JobSpec(**job)
    check_job(spec, tenant=tenant, field_prefix="job.")  # the schedule's job type may have gone since it was made
    return JobMessage.of(
        spec,
        job_id=job_id,
        tenant=tenant,
        enqueued_at=time.time(),
        schedule=name,
        scheduled_for=scheduled_for,
        overlap=overlap,
        trigger=trigger,
    )


def trigger(tenant: str, name: str, idempotency_key: str | None = None) -> Triggered:
    """Run the schedule's job now, as a run of the schedule (scheduled for now, trigger "manual"), paused or
    not. With `idempotency_key`, a trigger retried is the same run (answered as it stands). Under overlap
    "skip", a live earlier run makes it `skipped` at once. ScheduleNotFound; RateLimited (counts one)."""
    schedule = customer_schedules.get(tenant, name)
    if schedule is None:
        raise customer_schedules.ScheduleNotFound(name)
    rate_limit.check(tenant)
    now = time.time()
    secret = id_secret()
    if idempotency_key:
        job_id = ids.manual_run_id(secret, tenant, name, idempotency_key)
        existing = job_store.get(job_id)
        if existing is not None:  # this trigger, retried: answered as its run stands, not run again
            return Triggered(
                job_id, Status.SKIPPED if existing.status is Status.SKIPPED else Status.QUEUED, existing.skip_reason
            )
    else:
        job_id = ids.timed_id(secret, tenant, now)
    definition = schedule.definition
    message = _run_message(
        tenant,
        name,
        definition.job,
        job_id=job_id,
        scheduled_for=format_scheduled_time(datetime.fromtimestamp(now, UTC)),
        overlap=Overlap(definition.overlap),
        trigger=Trigger.MANUAL,
    )
    if definition.overlap == Overlap.SKIP:
        reason = schedule_runs.skip_if_overlapping(message, now)
        if reason is not None:
            return Triggered(job_id, Status.SKIPPED, reason)
    queue.send(message)
    return Triggered(job_id, Status.QUEUED)


def recent(tenant: str, name: str, limit: int = settings.SCHEDULE_RUNS_SHOWN) -> list[dict[str, Any]]:
    """The schedule's runs (once a worker has seen them, or they were skipped), newest first: what started
    each (`trigger`: schedule, manual or backfill), and why a skipped one did not run."""
    shown = []
    for run in schedule_runs.runs(tenant, name, limit):
        view: dict[str, Any] = {
            "id": run.id,
            "status": str(run.status),
            "scheduled_for": run.scheduled_for,
            "trigger": run.trigger or str(Trigger.SCHEDULE),
        }
        if run.skip_reason is not None:
            view["reason"] = run.skip_reason
        shown.append(view)
    return shown
