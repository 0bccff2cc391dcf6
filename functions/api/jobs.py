"""/v1/jobs routes: parse -> domain -> response."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from functions.api.responses import (
    MAX_FIELD_CHARS,
    MAX_MESSAGE_CHARS,
    cut,
    documented,
    error_response,
    json_response,
)
from shared import settings
from shared.enqueue import BulkOutcome, InvalidJob, JobRequest, NotSent, PayloadTooLarge, enqueue, enqueue_many
from shared.metrics import jobs_enqueued
from shared.model import JobMessage
from shared.quotas import QuotaExceeded
from shared.status import job_status

logger = Logger(service="corral-api", child=True)
router = APIGatewayHttpRouter()


class JobSpecIn(BaseModel):
    """What a job is: enqueued now (JobIn) or fired by a schedule (functions/api/schedules.py)."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1, max_length=64, description="A registered job type, e.g. echo")
    payload: Any = Field(default=None, description=f"Any JSON, at most {settings.MAX_PAYLOAD_BYTES} bytes")
    max_attempts: int = Field(default=settings.DEFAULT_MAX_ATTEMPTS, ge=1, le=settings.MAX_MAX_ATTEMPTS)


class JobIn(JobSpecIn):
    # Unset: the job type's own default (its @job_type options), not the platform's.
    max_attempts: int | None = Field(default=None, ge=1, le=settings.MAX_MAX_ATTEMPTS)  # type: ignore[assignment]
    timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=settings.MAX_JOB_TIMEOUT_SECONDS,
        description="Stop an attempt after this many seconds (default: the job type's; at most its maximum)",
    )
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=255)
    delay_seconds: int | None = Field(
        default=None, ge=0, le=settings.MAX_RUN_AT_DAYS * 86_400, description="Run this many seconds from now"
    )
    run_at: datetime | None = Field(default=None, description="Run at this time (ISO 8601; UTC if no offset)")


class JobsBatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Items are validated one by one (below), so one bad job is reported on its own.
    jobs: list[Any] = Field(
        min_length=1, max_length=settings.MAX_BATCH_JOBS, description="Jobs shaped like POST /v1/jobs bodies"
    )


def _tenant() -> str:
    return router.context["tenant"]


@router.post(
    "/v1/jobs",
    summary="Enqueue a job",
    responses=documented({202: {"description": "Accepted and queued"}}, 400, 403, 413, 422, 429),
)
def post_job(job: Annotated[JobIn, Body()]) -> Response[dict[str, Any]]:
    message = enqueue(_tenant(), JobRequest(**job.model_dump()))
    jobs_enqueued()
    return json_response(202, {"id": message.id, "status": "queued"})


@router.post(
    "/v1/jobs:batch",
    summary="Enqueue up to 100 jobs",
    responses=documented(
        {
            202: {"description": "Every job accepted and queued"},
            207: {"description": "Some jobs rejected; each result says which and why"},
        },
        400,
        413,
        422,
        429,
    ),
)
def post_jobs_batch(batch: Annotated[JobsBatchIn, Body()]) -> Response[dict[str, Any]]:
    parsed = [_parse_item(item) for item in batch.jobs]
    enqueued = iter(enqueue_many(_tenant(), [item for item in parsed if isinstance(item, JobRequest)]))
    outcomes = [next(enqueued) if isinstance(item, JobRequest) else item for item in parsed]
    not_sent = [outcome.detail for outcome in outcomes if isinstance(outcome, NotSent)]
    if not_sent:  # AWS's words stay in the log: they can name the account and roles
        logger.warning("bulk jobs not sent", extra={"count": len(not_sent), "details": sorted(set(not_sent))[:10]})
    results = [_item_result(index, outcome) for index, outcome in enumerate(outcomes)]
    rejected = sum(1 for result in results if result["status"] == "rejected")
    body = {"accepted": len(results) - rejected, "rejected": rejected, "results": results}
    return json_response(207 if rejected else 202, body)


def _parse_item(item: Any) -> JobRequest | InvalidJob:
    try:
        return JobRequest(**JobIn.model_validate(item).model_dump())
    except ValidationError as error:
        problem = error.errors()[0]
        return InvalidJob(".".join(str(part) for part in problem.get("loc", ())), problem.get("msg", "invalid"))


def _item_result(index: int, outcome: BulkOutcome) -> dict[str, Any]:
    if isinstance(outcome, JobMessage):
        return {"index": index, "id": outcome.id, "status": "queued"}
    if isinstance(outcome, NotSent):
        return {"index": index, "status": "rejected", "error": "unavailable", "message": outcome.reason}
    if isinstance(outcome, QuotaExceeded):
        code = "quota_exceeded" if outcome.retry_can_help else "forbidden"
        message = outcome.message
        return {"index": index, "status": "rejected", "error": code, "message": message, "quota": outcome.limit_name}
    field = cut(f"jobs[{index}]" + (f".{outcome.field}" if outcome.field else ""), MAX_FIELD_CHARS)
    code = "payload_too_large" if isinstance(outcome, PayloadTooLarge) else "invalid_request"
    message = cut(outcome.message, MAX_MESSAGE_CHARS)
    return {"index": index, "status": "rejected", "error": code, "message": message, "field": field}


@router.get(
    "/v1/jobs/<job_id>",
    summary="A job's status and result",
    responses=documented({200: {"description": "The job"}}, 404, 422),
)
def get_job(job_id: Annotated[str, Path(max_length=128)]) -> Response[dict[str, Any]]:
    record = job_status(_tenant(), job_id)
    if record is None:
        return error_response(404, "not_found", f"no job {job_id!r}")
    return json_response(200, record.public())
