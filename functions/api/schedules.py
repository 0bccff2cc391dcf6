"""/v1/schedules routes: parse -> domain -> response.

Create, list, get, update (PATCH), delete; pause and resume; trigger (run now); backfill. Every route
that writes counts against the tenant's rate limit (the domain checks it before writing): one each, and
a backfill one per run it enqueues.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from functions.api.answers import (
    AcceptedOut,
    BackfillOut,
    ScheduleDeletedOut,
    ScheduleOut,
    SchedulePageOut,
    SkippedRunOut,
)
from functions.api.caller import Tenant
from functions.api.models import JobSpecIn, ThrottleIn, debounce_model, idempotency_key_field, unique_model
from functions.api.openapi_docs import answer, documented
from functions.api.responses import json_response
from shared import settings
from shared.flow.priority import Priority
from shared.model.states import Overlap, Status
from shared.schedules import definitions, lifecycle, queries, runs

router = APIGatewayHttpRouter()

# One class per field (functions/api/models.py says why).
ScheduleDebounceIn = debounce_model("ScheduleDebounceIn")
ScheduleUniqueIn = unique_model("ScheduleUniqueIn")
ScheduleDebounceChangeIn = debounce_model("ScheduleDebounceChangeIn")
ScheduleUniqueChangeIn = unique_model("ScheduleUniqueChangeIn")


class ScheduleJobIn(JobSpecIn):
    # A schedule's runs default to the platform's attempts, not their job type's.
    max_attempts: int = Field(default=settings.DEFAULT_MAX_ATTEMPTS, ge=1, le=settings.MAX_MAX_ATTEMPTS)
    timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=settings.MAX_JOB_TIMEOUT_SECONDS,
        description="Stop each run's attempt after this many seconds (default: the job type's; at most its maximum)",
    )
    throttle: ThrottleIn | None = Field(
        default=None,
        description="At most `limit` of this tenant's jobs with `key` start in any window of `period_seconds` "
        "(default: the job type's throttle, if it declares one)",
    )
    debounce: ScheduleDebounceIn | None = Field(
        default=None,
        description="Its runs (and this tenant's jobs with `key`) arriving within `period_seconds` of each other run "
        "once, `period_seconds` after the last; each other run ends `skipped`, naming the run that ran",
    )
    unique: ScheduleUniqueIn | None = Field(
        default=None,
        description="A run is recorded `skipped`, naming the holder, while this tenant's job holding `key` has not "
        "started (`until: started`) or not ended (`until: finished`), at most `for_seconds`",
    )
    priority: Priority | None = Field(default=None, description="Its runs' priority level (default: default)")


class ScheduleIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=settings.SCHEDULE_NAME_MAX_LENGTH, description="A-Z a-z 0-9 _ . -")
    expression: str = Field(
        min_length=1,
        max_length=256,
        description="EventBridge Scheduler syntax: cron(0 0 * * ? *), rate(5 minutes) or at(2026-12-31T23:59:00)",
    )
    timezone: str = Field(default="UTC", max_length=64, description="IANA name; cron() and at() are read in it")
    job: ScheduleJobIn
    flexible_window_minutes: int = Field(
        default=0, ge=0, le=settings.MAX_FLEXIBLE_WINDOW_MINUTES, description="0: fire on time; n: within n minutes"
    )
    start: datetime | None = Field(default=None, description="No firing before this (ISO 8601; UTC if no offset)")
    end: datetime | None = Field(default=None, description="No firing after this (ISO 8601; UTC if no offset)")
    overlap: Overlap = Field(
        default=Overlap.ALLOW,
        description="skip: a run whose earlier run of this schedule is still queued, running or waiting to retry"
        " is recorded `skipped` instead of running",
    )
    description: str | None = Field(default=None, max_length=settings.SCHEDULE_TEXT_MAX_LENGTH)


class ScheduleJobChangesIn(JobSpecIn):
    """The job fields to change; the others keep their values."""

    type: str | None = Field(default=None, min_length=1, max_length=64, description="A registered job type, e.g. echo")
    throttle: ThrottleIn | None = Field(default=None, description="Its runs' throttle; null: none of its own")
    debounce: ScheduleDebounceChangeIn | None = Field(default=None, description="Its runs' debounce; null: none")
    unique: ScheduleUniqueChangeIn | None = Field(default=None, description="Its runs' unique key; null: none")
    priority: Priority | None = Field(default=None, description="Its runs' priority; null: the default level")


class ScheduleChangesIn(BaseModel):
    """The fields to change (a field left out keeps its value; null clears start, end or description)."""

    model_config = ConfigDict(extra="forbid")

    expression: str | None = Field(default=None, min_length=1, max_length=256)
    timezone: str | None = Field(default=None, max_length=64)
    job: ScheduleJobChangesIn | None = None
    flexible_window_minutes: int | None = Field(default=None, ge=0, le=settings.MAX_FLEXIBLE_WINDOW_MINUTES)
    start: datetime | None = None
    end: datetime | None = None
    overlap: Overlap | None = None
    description: str | None = Field(default=None, max_length=settings.SCHEDULE_TEXT_MAX_LENGTH)


class PauseIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    note: str | None = Field(
        default=None, max_length=settings.SCHEDULE_TEXT_MAX_LENGTH, description="Why, shown with the schedule"
    )


class TriggerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    idempotency_key: str | None = idempotency_key_field(
        "The same key triggers the same run once, and a retried trigger answers as the first did"
    )


class BackfillIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    start: datetime = Field(description="The first firing time included (ISO 8601; UTC if no offset)")
    end: datetime = Field(description="Firing times before this (excluded; at the latest now)")


_NAME = Path(max_length=128)


@router.post(
    "/v1/schedules",
    tags=["schedules"],
    summary="Create a schedule",
    responses=documented({201: answer(ScheduleOut, "Created: the schedule")}, 400, 403, 409, 413, 422, 429),
)
def post_schedule(tenant: Tenant, schedule: Annotated[ScheduleIn, Body()]) -> Response[dict[str, Any]]:
    job = schedule.job
    request = definitions.ScheduleRequest(
        **schedule.model_dump(exclude={"job"}),
        job=job.spec(),
        throttle=job.throttle,
        debounce=job.debounce,
        unique=job.unique,
        priority=job.priority,
    )
    return json_response(201, lifecycle.create(tenant, request).public())


@router.get(
    "/v1/schedules",
    tags=["schedules"],
    summary="This tenant's schedules by name (cursor-paginated)",
    description="Pass `next_cursor` back as `cursor` for the next page; null: that was the last.",
    responses=documented({200: answer(SchedulePageOut, "A page of schedules, by name")}),
)
def list_schedules(
    tenant: Tenant,
    limit: Annotated[int, Query(ge=1, le=settings.LIST_MAX_LIMIT)] = settings.LIST_DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512, description="next_cursor of the previous page")] = None,
) -> Response[dict[str, Any]]:
    page = queries.list_page(tenant, limit=limit, cursor=cursor)
    return json_response(
        200, {"schedules": [item.public() for item in page.schedules], "next_cursor": page.next_cursor}
    )


@router.get(
    "/v1/schedules/<name>",
    tags=["schedules"],
    summary="A schedule, its next firings and its recent runs, newest first",
    responses=documented({200: answer(ScheduleOut, "The schedule, with next_firings and runs")}, 404, 422),
)
def get_schedule(tenant: Tenant, name: Annotated[str, _NAME]) -> Response[dict[str, Any]]:
    item = queries.existing(tenant, name)
    next_firings = queries.next_firings(item, count=settings.SCHEDULE_FIRINGS_SHOWN)
    return json_response(200, {**item.public(), "next_firings": next_firings, "runs": runs.recent(tenant, name)})


@router.patch(
    "/v1/schedules/<name>",
    tags=["schedules"],
    summary="Change a schedule: any of expression, timezone, job, flexible_window_minutes, start, end, overlap,"
    " description",
    description=(
        "One UpdateSchedule: a firing due meanwhile happens once, with the old definition or the new one. A bad "
        "field answers 422 naming it, and the schedule stays as it was. Its name, runs and quota unit stay. "
        "Counts one against the tenant's rate limit. With dry_run=true, nothing is written or counted: the answer "
        "is the schedule as the update would leave it, with its next firings."
    ),
    responses=documented(
        {
            200: answer(
                ScheduleOut, "The schedule as it is now; with dry_run, as the update would leave it, with next_firings"
            )
        },
        400,
        404,
        409,
        413,
        422,
        429,
    ),
)
def patch_schedule(
    tenant: Tenant,
    name: Annotated[str, _NAME],
    changes: Annotated[ScheduleChangesIn, Body()],
    dry_run: Annotated[bool, Query(description="Check the changes and answer the result without saving")] = False,
) -> Response[dict[str, Any]]:
    fields = changes.model_dump(exclude_unset=True)
    if dry_run:
        previewed = queries.preview(tenant, name, fields)
        firings = queries.next_firings(previewed, count=settings.SCHEDULE_FIRINGS_SHOWN)
        return json_response(200, {**previewed.public(), "next_firings": firings})
    return json_response(200, lifecycle.update(tenant, name, fields).public())


@router.post(
    "/v1/schedules/<name>:pause",
    tags=["schedules"],
    summary="Pause a schedule: it does not fire until resumed",
    description="Idempotent: pausing a paused schedule changes nothing. A trigger still runs it by hand. Counts one"
    " against the tenant's rate limit.",
    responses=documented({200: answer(ScheduleOut, "The schedule, state paused")}, 400, 404, 409, 422, 429),
)
def pause_schedule(
    tenant: Tenant, name: Annotated[str, _NAME], pause: Annotated[PauseIn | None, Body()] = None
) -> Response[dict[str, Any]]:
    paused = lifecycle.pause(tenant, name, note=pause.note if pause else None)
    return json_response(200, paused.public())


@router.post(
    "/v1/schedules/<name>:resume",
    tags=["schedules"],
    summary="Resume a paused schedule",
    description="Idempotent: resuming an enabled schedule changes nothing. Counts one against the tenant's rate limit.",
    responses=documented({200: answer(ScheduleOut, "The schedule, state enabled")}, 404, 409, 422, 429),
)
def resume_schedule(tenant: Tenant, name: Annotated[str, _NAME]) -> Response[dict[str, Any]]:
    return json_response(200, lifecycle.resume(tenant, name).public())


@router.post(
    "/v1/schedules/<name>:trigger",
    tags=["schedules"],
    summary="Run a schedule's job now, as a run of the schedule (trigger: manual)",
    description=(
        "202 when queued. Under overlap skip, while an earlier run is still queued, running or waiting to retry, "
        "200 with status skipped and the reason (recorded as a run). With an idempotency_key, a retried trigger "
        "answers its run again and never runs it twice. Counts one against the tenant's rate limit."
    ),
    responses=documented(
        {
            202: answer(AcceptedOut, "The run, queued (its id is its job's)"),
            200: answer(SkippedRunOut, "The run, skipped under overlap skip, and why (recorded as a run)"),
        },
        400,
        404,
        409,
        422,
        429,
    ),
)
def trigger_schedule(
    tenant: Tenant, name: Annotated[str, _NAME], request: Annotated[TriggerIn | None, Body()] = None
) -> Response[dict[str, Any]]:
    triggered = runs.trigger(tenant, name, idempotency_key=request.idempotency_key if request else None)
    if triggered.status is Status.SKIPPED:
        return json_response(200, {"id": triggered.id, "status": str(triggered.status), "reason": triggered.reason})
    return json_response(202, {"id": triggered.id, "status": "queued"})


@router.delete(
    "/v1/schedules/<name>",
    tags=["schedules"],
    summary="Delete a schedule (its runs stay)",
    responses=documented({200: answer(ScheduleDeletedOut, "Deleted (its runs stay)")}, 404, 409, 422, 429),
)
def delete_schedule(tenant: Tenant, name: Annotated[str, _NAME]) -> Response[dict[str, Any]]:
    lifecycle.delete(tenant, name)
    return json_response(200, {"name": name, "deleted": True})


@router.post(
    "/v1/schedules/<name>:backfill",
    tags=["schedules"],
    summary=f"Run the schedule's firings of a past window now, at most {settings.BACKFILL_MAX_RUNS}",
    description=(
        "One run per firing time from start (included) to end (excluded), each with the id of that occurrence: "
        "repeating a backfill, or meeting a real firing of the same time, never runs one twice. Backfilled runs "
        "are never skipped for overlap. Each run counts one against the tenant's rate limit, all or none."
    ),
    responses=documented(
        {202: answer(BackfillOut, "The runs queued, one per firing time, oldest first")}, 400, 404, 409, 422, 429
    ),
)
def backfill_schedule(
    tenant: Tenant, name: Annotated[str, _NAME], window: Annotated[BackfillIn, Body()]
) -> Response[dict[str, Any]]:
    backfilled = runs.backfill(tenant, name, window.start, window.end)
    return json_response(202, {"runs": [{"id": run.id, "scheduled_for": run.scheduled_for} for run in backfilled]})
