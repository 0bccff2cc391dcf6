"""/v1/jobs routes: parse -> domain -> response."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from functions.api.responses import error_response, json_response
from shared import settings
from shared.enqueue import JobRequest, enqueue
from shared.metrics import jobs_enqueued
from shared.status import job_status

router = APIGatewayHttpRouter()


class JobIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1, max_length=64, description="A registered job type, e.g. echo")
    payload: Any = Field(default=None, description=f"Any JSON, at most {settings.MAX_PAYLOAD_BYTES} bytes")
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=255)
    delay_seconds: int | None = Field(
        default=None, ge=0, le=settings.MAX_RUN_AT_DAYS * 86_400, description="Run this many seconds from now"
    )
    run_at: datetime | None = Field(default=None, description="Run at this time (ISO 8601; UTC if no offset)")
    max_attempts: int = Field(default=settings.DEFAULT_MAX_ATTEMPTS, ge=1, le=settings.MAX_MAX_ATTEMPTS)


def _tenant() -> str:
    return router.context["tenant"]


@router.post("/v1/jobs", summary="Enqueue a job", responses={202: {"description": "Accepted and queued"}})
def post_job(job: Annotated[JobIn, Body()]) -> Response[dict[str, Any]]:
    message = enqueue(_tenant(), JobRequest(**job.model_dump()))
    jobs_enqueued()
    return json_response(202, {"id": message.id, "status": "queued"})


@router.get("/v1/jobs/<job_id>", summary="A job's status and result")
def get_job(job_id: Annotated[str, Path(max_length=128)]) -> Response[dict[str, Any]]:
    record = job_status(_tenant(), job_id)
    if record is None:
        return error_response(404, "not_found", f"no job {job_id!r}")
    return json_response(200, record.public())
