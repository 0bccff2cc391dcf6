"""/v1/schedules routes: parse -> domain -> response."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from functions.api.models import JobSpecIn
from functions.api.responses import documented, error_response, json_response
from shared import settings
from shared.schedules import customer_schedules

router = APIGatewayHttpRouter()


class ScheduleJobIn(JobSpecIn):
    # A schedule's runs default to the platform's attempts, not their job type's.
    max_attempts: int = Field(default=settings.DEFAULT_MAX_ATTEMPTS, ge=1, le=settings.MAX_MAX_ATTEMPTS)
    timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=settings.MAX_JOB_TIMEOUT_SECONDS,
        description="Stop each run's attempt after this many seconds (default: the job type's; at most its maximum)",
    )


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


def _tenant() -> str:
    return router.context["tenant"]


@router.post(
    "/v1/schedules",
    summary="Create a schedule",
    responses=documented({201: {"description": "Created"}}, 400, 403, 409, 413, 422, 429),
)
def post_schedule(schedule: Annotated[ScheduleIn, Body()]) -> Response[dict[str, Any]]:
    request = customer_schedules.ScheduleRequest(
        name=schedule.name,
        expression=schedule.expression,
        job=schedule.job.spec(),
        timezone=schedule.timezone,
        flexible_window_minutes=schedule.flexible_window_minutes,
        start=schedule.start,
        end=schedule.end,
    )
    try:
        created = customer_schedules.create(_tenant(), request)
    except customer_schedules.ScheduleExists:
        return error_response(409, "conflict", f"a schedule named {schedule.name!r} exists; delete it first")
    return json_response(201, created.public())


@router.get(
    "/v1/schedules",
    summary="This tenant's schedules by name (cursor-paginated)",
    description="Pass `next_cursor` back as `cursor` for the next page; null: that was the last.",
    responses=documented({200: {"description": '{"schedules": [...], "next_cursor": str | null}'}}),
)
def list_schedules(
    limit: Annotated[int, Query(ge=1, le=settings.LIST_MAX_LIMIT)] = settings.LIST_DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512, description="next_cursor of the previous page")] = None,
) -> Response[dict[str, Any]]:
    page = customer_schedules.list_page(_tenant(), limit=limit, cursor=cursor)
    return json_response(
        200, {"schedules": [item.public() for item in page.schedules], "next_cursor": page.next_cursor}
    )


@router.get(
    "/v1/schedules/<name>",
    summary="A schedule, its next firings and its recent runs, newest first",
    responses=documented({200: {"description": "The schedule"}}, 404, 422),
)
def get_schedule(name: Annotated[str, Path(max_length=128)]) -> Response[dict[str, Any]]:
    item = customer_schedules.get(_tenant(), name)
    if item is None:
        return error_response(404, "not_found", f"no schedule {name!r}")
    next_firings = customer_schedules.next_firings(item, count=settings.SCHEDULE_FIRINGS_SHOWN)
    return json_response(
        200, {**item.public(), "next_firings": next_firings, "runs": customer_schedules.recent_runs(_tenant(), name)}
    )


@router.delete(
    "/v1/schedules/<name>",
    summary="Delete a schedule (its runs stay)",
    responses=documented({200: {"description": "Deleted"}}, 404, 409, 422, 429),
)
def delete_schedule(name: Annotated[str, Path(max_length=128)]) -> Response[dict[str, Any]]:
    if not customer_schedules.delete(_tenant(), name):
        return error_response(404, "not_found", f"no schedule {name!r}")
    return json_response(200, {"name": name, "deleted": True})
