"""A schedule's runs: the jobs its firings, its manual triggers and its backfills became.

A firing's run is put on the queue by EventBridge Scheduler itself (shared/schedules/lifecycle.py);
a trigger's and a backfill's by the API, here, as the same job message the firing would carry, marked with
what started it. Whatever started it, a run of a schedule that skips overlaps is checked at its claim
(shared/store/schedules/schedule_runs.py), and a trigger is checked here first, so its answer can say "skipped".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from shared import ids, settings
from shared.aws import queue
from shared.errors import InvalidRequest, Unavailable
from shared.jobs.enqueue import check_job
from shared.model.firing import format_scheduled_time
from shared.model.message import JobMessage
from shared.model.states import Overlap, Status, Trigger
from shared.schedules import definitions, expressions, queries
from shared.store.id_secret import id_secret
from shared.store.schedules import schedule_runs
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
    """The run's message, with its schedule's flow options. A backfill's runs carry no debounce or unique key: a
    backfill asks for every occurrence of its window, as it asks past the overlap check."""
    spec, flow = definitions.spec_of(job)
    check_job(spec, tenant=tenant, field_prefix="job.")  # the schedule's job type may have gone since it was made
    if trigger is Trigger.BACKFILL:
        flow = replace(flow, debounce=None, unique=None)
    return JobMessage.of(
        spec,
        job_id=job_id,
        tenant=tenant,
        enqueued_at=time.time(),
        schedule=name,
        scheduled_for=scheduled_for,
        overlap=overlap,
        trigger=trigger,
    ).with_flow(flow)


def trigger(tenant: str, name: str, idempotency_key: str | None = None) -> Triggered:
    """Run the schedule's job now, as a run of the schedule (scheduled for now, trigger "manual"), paused or
    not. Under overlap "skip", a live earlier run makes it `skipped` at once. ScheduleNotFound; RateLimited
    (counts one).

    With `idempotency_key`, a trigger retried is the same run, answered as the first trigger was: `skipped`
    (with its reason) if that trigger skipped it, else `queued` (whatever became of the run since, a skip
    at its claim included), and it is not sent again. The key is the schedule's: the run's id derives from
    the schedule's name and the key, and the request holds nothing else, so no other request can reuse it.
    Until a worker has recorded the run, a retried trigger cannot tell it from a first one: it is checked
    for overlap and sent again (the same id: the claim runs it once)."""
    schedule = queries.existing(tenant, name)
    rate_limit.check(tenant)
    now = time.time()
    secret = id_secret()
    if idempotency_key:
        job_id = ids.manual_run_id(secret, tenant, name, idempotency_key)
        existing = schedule_runs.triggered_run(job_id)
        if existing is not None:  # this trigger, retried: answered as the first was, not run again
            if existing.skipped_reason is not None:
                return Triggered(job_id, Status.SKIPPED, existing.skipped_reason)
            return Triggered(job_id, Status.QUEUED)
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
        reason = schedule_runs.skip_if_overlapping(message, now, at_trigger=True)
        if reason is not None:
            return Triggered(job_id, Status.SKIPPED, reason)
    queue.send(message)
    return Triggered(job_id, Status.QUEUED)


@dataclass(frozen=True)
class Backfilled:
    id: str
    scheduled_for: str


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def backfill(tenant: str, name: str, start: datetime, end: datetime) -> list[Backfilled]:
    """Enqueue one run per firing time of the schedule from `start` (included) to `end` (excluded, at the
    latest now), at most settings.BACKFILL_MAX_RUNS: the runs, oldest first.

    Each run has the id of its occurrence (`ids.scheduled_id`), the id its own firing had or would have: a
    backfill repeated, or one that meets a real firing, is the same jobs, and the claim runs each once. So
    a backfill that could not send all its runs (Unavailable) is retried whole. Backfilled runs are never
    skipped for overlap: a backfill asks for every occurrence of its window. The window is the caller's:
    the schedule's own start, end and pause do not narrow it. RateLimited: each run counts one, all or none.
    """
    start, end, now = _aware(start), _aware(end), datetime.now(UTC)
    if end <= start:
        raise InvalidRequest("end", "must be after start")
    if end > now + timedelta(seconds=1):
        raise InvalidRequest("end", "must not be in the future: a backfill runs occurrences already due")
    schedule = queries.existing(tenant, name)
    definition = schedule.definition
    times = expressions.firings_between(
        definition.expression,
        definition.timezone,
        anchor=definition.start or schedule.created_at,
        start=start,
        end=end,
        limit=settings.BACKFILL_MAX_RUNS,
    )
    if times is None:
        raise InvalidRequest("expression", "its firing times cannot be listed (W, nearest weekday): not backfillable")
    if len(times) > settings.BACKFILL_MAX_RUNS:
        raise InvalidRequest(
            "end", f"the window holds more than {settings.BACKFILL_MAX_RUNS} firings; backfill it in parts"
        )
    if not times:
        return []
    rate_limit.check(tenant, len(times))
    secret = id_secret()
    messages = []
    for when in times:
        scheduled_for = format_scheduled_time(when)
        messages.append(
            _run_message(
                tenant,
                name,
                definition.job,
                job_id=ids.scheduled_id(secret, tenant, name, scheduled_for),
                scheduled_for=scheduled_for,
                overlap=Overlap.ALLOW,
                trigger=Trigger.BACKFILL,
            )
        )
    not_sent = queue.send_batch([(message, 0) for message in messages])
    if any(reason is not None for reason in not_sent):
        raise Unavailable("part of the backfill was not queued; repeat it: a repeated backfill runs nothing twice")
    return [Backfilled(message.id, message.scheduled_for or "") for message in messages]


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
