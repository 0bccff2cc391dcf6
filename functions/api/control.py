"""Seeing jobs and cancelling or retrying them: list, cancel, retry (one or the dead in bulk), stats."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from functions.api.answers import AcceptedOut, JobOut, JobPageOut, RetriedOut, StatsOut
from functions.api.caller import Tenant
from functions.api.openapi_docs import answer, documented
from functions.api.responses import json_response
from shared import settings
from shared.control import cancel, retry
from shared.jobs import listing, stats
from shared.model.states import Status
from shared.tenants import rate_limit

router = APIGatewayHttpRouter()

_JOB_ID = Path(max_length=128)
_NOT_FOUND = {404: {"description": "not_found: no such job for this API key's tenant"}}


def _epoch(value: datetime | None) -> float | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


@router.get(
    "/v1/jobs",
    tags=["jobs"],
    summary="This tenant's jobs, newest first (cursor-paginated)",
    description=(
        "Filters: status, type, schedule (applied after reading: a page may hold fewer than `limit` jobs while "
        f"`next_cursor` is set; each request reads at most {settings.LIST_READ_BUDGET} entries), since/until "
        "(enqueue time, ISO 8601, UTC if no offset). Pass `next_cursor` back as `cursor` with the same filters. "
        f"Items are job views without `result` and `payload` (GET /v1/jobs/{{id}} has them). {listing.NOTE} "
        f"A filtered request is metered: {settings.HEAVY_READS_PER_SECOND}/s per tenant with bursts of "
        f"{settings.HEAVY_READS_BURST}, shared with GET /v1/stats (429 over it)."
    ),
    responses=documented({200: answer(JobPageOut, "A page of jobs, newest first")}, 429),
)
def list_jobs(
    tenant: Tenant,
    status: Annotated[Status | None, Query(description="Only jobs in this status")] = None,
    type: Annotated[str | None, Query(max_length=64, description="Only jobs of this type")] = None,
    schedule: Annotated[str | None, Query(max_length=128, description="Only runs of this schedule")] = None,
    since: Annotated[datetime | None, Query(description="Enqueued at or after (ISO 8601)")] = None,
    until: Annotated[datetime | None, Query(description="Enqueued at or before (ISO 8601)")] = None,
    limit: Annotated[int, Query(ge=1, le=settings.LIST_MAX_LIMIT)] = settings.LIST_DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512, description="next_cursor of the previous page")] = None,
) -> Response[dict[str, Any]]:
    query = listing.JobsQuery(
        status=str(status) if status else None,
        job_type=type,
        schedule=schedule,
        since=_epoch(since),
        until=_epoch(until),
        limit=limit,
        cursor=cursor,
    )
    if status or type or schedule:  # read past what it answers, up to LIST_READ_BUDGET entries: metered
        rate_limit.check_heavy_read(tenant)
    page = listing.list_jobs(tenant, query)
    body = {
        "jobs": [job.public(with_bodies=False) for job in page.jobs],
        "next_cursor": page.next_cursor,
        "note": listing.NOTE,
    }
    return json_response(200, body)


@router.post(
    "/v1/jobs/<job_id>/cancel",
    tags=["jobs"],
    summary="Cancel a job that has not started (queued, delayed or waiting for a retry)",
    description=(
        "Idempotent: a cancelled job answers 200 again. A running job answers 409 (it ends on its own); a finished "
        "one 409. A cancelled job never runs: a delivery of it is acknowledged unrun. Counts one against the "
        "tenant's rate limit."
    ),
    responses=documented(
        {
            200: answer(JobOut, "The job, status cancelled"),
            **_NOT_FOUND,
            409: {"description": "conflict: the job is running or has finished (the message says which)"},
        },
        429,
    ),
)
def cancel_job(tenant: Tenant, job_id: Annotated[str, _JOB_ID]) -> Response[dict[str, Any]]:
    return json_response(200, cancel.cancel(tenant, job_id).public())


@router.post(
    "/v1/jobs/<job_id>/retry",
    tags=["jobs"],
    summary="Run a dead or cancelled job again, with a fresh attempt budget (same id)",
    description=(
        "Idempotent: a job a retry already queued answers 202 again and is not sent again. Counts one against the "
        "tenant's rate limit."
    ),
    responses=documented(
        {
            202: answer(AcceptedOut, "Queued again, with a fresh attempt budget"),
            **_NOT_FOUND,
            409: {
                "description": "conflict: the job is not dead or cancelled, or it was cancelled before its payload "
                "was recorded (the message says which)"
            },
        },
        429,
    ),
)
def retry_job(tenant: Tenant, job_id: Annotated[str, _JOB_ID]) -> Response[dict[str, Any]]:
    message = retry.retry(tenant, job_id)
    return json_response(202, {"id": message.id, "status": "queued"})


class BulkRetryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str | None = Field(default=None, min_length=1, max_length=64, description="Only dead jobs of this type")
    since: datetime | None = Field(default=None, description="Only dead jobs enqueued at or after (ISO 8601)")
    limit: int = Field(default=settings.BULK_RETRY_MAX, ge=1, le=settings.BULK_RETRY_MAX)


@router.post(
    "/v1/jobs:retry",
    tags=["jobs"],
    summary=f"Retry this tenant's dead jobs, newest first, at most {settings.BULK_RETRY_MAX} a request",
    description=(
        "Its read of the index is metered first, found or not, with filtered listings: "
        f"{settings.HEAVY_READS_PER_SECOND}/s per tenant with bursts of {settings.HEAVY_READS_BURST}. Each dead job "
        "found then counts one against the tenant's rate limit, all or none, before any is retried: a 429 retried "
        "none."
    ),
    responses=documented({200: answer(RetriedOut, "The dead jobs queued again; while `more`, call again")}, 429),
)
def retry_dead_jobs(tenant: Tenant, request: Annotated[BulkRetryIn, Body()]) -> Response[dict[str, Any]]:
    outcome = retry.retry_dead(tenant, request.type, _epoch(request.since), request.limit)
    body = {"retried": len(outcome.ids), "ids": outcome.ids, "more": outcome.more, "skipped": outcome.skipped}
    return json_response(200, body)


@router.get(
    "/v1/stats",
    tags=["jobs"],
    summary="This tenant's counts by status, per-minute throughput (last hour), enqueue-to-run percentiles",
    description=(
        "From the job store (the answer's `source` says exactly what was read); jobs no worker has picked up yet "
        f"are not counted; at most {settings.STATS_MAX_RECORDS} records are read (`sampled` says when more exist). "
        f"Answered from figures read within {settings.STATS_CACHE_SECONDS} s; a new read is metered with filtered "
        "listings (429 over it)."
    ),
    responses=documented({200: answer(StatsOut, "The tenant's counts, throughput and waits")}, 429),
)
def get_stats(
    tenant: Tenant,
    window_seconds: Annotated[
        int, Query(ge=1, le=settings.STATS_MAX_WINDOW_SECONDS, description="Counts cover jobs enqueued this recently")
    ] = settings.STATS_DEFAULT_WINDOW_SECONDS,
) -> Response[dict[str, Any]]:
    figures = stats.recent_tenant_stats(tenant, window_seconds, on_read=lambda: rate_limit.check_heavy_read(tenant))
    return json_response(200, figures.public())
