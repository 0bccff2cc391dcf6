"""/v1/jobs routes as the resolver declares them: their models document the OpenAPI schema.

Requests on these routes are answered by functions/api/enqueue_routes.py without the resolver,
validated with the pydantic-core schemas of the models here (functions/api/job_schemas.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from functions.api.answers import AcceptedOut, BulkOut, DuplicateOut, JobOut
from functions.api.caller import Tenant
from functions.api.enqueue_routes import accepted, duplicate, enqueue_items
from functions.api.models import (
    DebounceIn,
    JobSpecIn,
    ThrottleIn,
    callback_model,
    concurrency_model,
    idempotency_key_field,
    unique_model,
)
from functions.api.openapi_docs import answer, documented
from functions.api.responses import json_response
from shared import settings
from shared.aws.metrics import jobs_enqueued
from shared.jobs.enqueue import JobRequest, enqueue
from shared.jobs.status import job_status
from shared.store.flow.unique_keys import DuplicateOf

router = APIGatewayHttpRouter()


ConcurrencyIn = concurrency_model("ConcurrencyIn")
OnSuccessIn = callback_model("OnSuccessIn")
OnFailureIn = callback_model("OnFailureIn")
UniqueIn = unique_model("UniqueIn")


# A job's spec, then its enqueue options, in one flat body (JobRequest.from_fields splits them). No
# docstring: the OpenAPI document would show it as the schema's description.
class JobIn(JobSpecIn):
    idempotency_key: str | None = idempotency_key_field(
        "The same key is the same job (the same id), run once. Another request with the key is not "
        "refused at enqueue (nothing is stored then): the first request a worker claims is the job's, the others "
        "never run, and the job's `request` says which ran"
    )
    delay_seconds: int | None = Field(
        default=None, ge=0, le=settings.MAX_RUN_AT_DAYS * 86_400, description="Run this many seconds from now"
    )
    run_at: datetime | None = Field(default=None, description="Run at this time (ISO 8601; UTC if no offset)")
    concurrency: ConcurrencyIn | None = Field(
        default=None, description="At most `limit` of this tenant's jobs with this `key` run at once"
    )
    on_success: OnSuccessIn | None = Field(
        default=None, description="A job enqueued once this one succeeded; its payload gets `parent`: this job's view"
    )
    on_failure: OnFailureIn | None = Field(
        default=None, description="A job enqueued once this one is dead; its payload gets `parent`: this job's view"
    )
    unique: UniqueIn | None = Field(
        default=None,
        description="While this tenant's job with `key` waits to start (`until: started`) or until it ends "
        "(`until: finished`), at most `for_seconds`, another job with the key is answered 200 with that job's id "
        "and `status: duplicate`, and nothing is enqueued",
    )
    throttle: ThrottleIn | None = Field(
        default=None,
        description="At most `limit` of this tenant's jobs with `key` start in any window of `period_seconds`; the "
        "others wait (using no attempt) and start in enqueue order as the windows allow",
    )
    debounce: DebounceIn | None = Field(
        default=None,
        description="This tenant's jobs with `key` arriving within `period_seconds` of each other run once, "
        "`period_seconds` after the last, with the last one's payload (at most `max_wait_seconds` after the "
        "first); each other ends `skipped`, its `reason` naming the job that ran. Not with delay_seconds or run_at",
    )
    priority: Literal["high", "default", "low"] | None = Field(
        default=None,
        description="Its lane: a high job waits only behind high jobs, a low one only behind low ones, each lane with "
        "its own share of the workers (default: the job type's priority, else `default`)",
    )


class JobsBatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Items are validated one by one (below), so one bad job is reported on its own.
    jobs: list[Any] = Field(
        min_length=1, max_length=settings.MAX_BATCH_JOBS, description="Jobs shaped like POST /v1/jobs bodies"
    )


@router.post(
    "/v1/jobs",
    tags=["jobs"],
    summary="Enqueue a job",
    responses=documented(
        {
            202: answer(
                AcceptedOut,
                "Accepted and queued (to run after its delay or at its run_at, if given); with an idempotency_key, "
                "`request` is this request's fingerprint, which GET /v1/jobs/{id} shows for the request that runs "
                "under the key",
            ),
            200: answer(DuplicateOut, "Another job holds this job's unique key: its id, and nothing was enqueued"),
        },
        400,
        403,
        413,
        422,
        429,
    ),
)
def post_job(tenant: Tenant, job: Annotated[JobIn, Body()]) -> Response[dict[str, Any]]:
    message = enqueue(tenant, JobRequest.from_fields(job.model_dump()))
    if isinstance(message, DuplicateOf):
        return json_response(200, duplicate(message))
    jobs_enqueued()
    return json_response(202, accepted(message))


@router.post(
    "/v1/jobs:batch",
    tags=["jobs"],
    summary="Enqueue up to 100 jobs",
    responses=documented(
        {
            202: answer(BulkOut, "Every job accepted and queued"),
            207: answer(BulkOut, "Some jobs rejected (the others are queued); each result says which and why"),
        },
        400,
        413,
        422,
        429,
    ),
)
def post_jobs_batch(tenant: Tenant, batch: Annotated[JobsBatchIn, Body()]) -> Response[dict[str, Any]]:
    return json_response(*enqueue_items(tenant, batch.jobs))


@router.get(
    "/v1/jobs/<job_id>",
    tags=["jobs"],
    summary="A job's status and result",
    responses=documented(
        {200: answer(JobOut, "The job: its status and attempts; once it ended, its result or error")}, 404
    ),
)
def get_job(tenant: Tenant, job_id: Annotated[str, Path(max_length=128)]) -> Response[dict[str, Any]]:
    return json_response(200, job_status(tenant, job_id).public())


def core_schemas() -> dict[str, dict[str, Any]]:
    """The models' pydantic-core validation schemas as plain data: what functions/api/job_schemas.py holds."""

    def plain(node: Any) -> Any:  # without the model class, its ref and the JSON-schema metadata (functions)
        if isinstance(node, dict):
            return {key: plain(value) for key, value in node.items() if key not in ("cls", "ref", "metadata")}
        return [plain(value) for value in node] if isinstance(node, list) else node

    models = {"JOB_IN": JobIn, "JOBS_BATCH_IN": JobsBatchIn}
    return {name: plain(model.__pydantic_core_schema__) for name, model in models.items()}


if __name__ == "__main__":  # python -m functions.api.jobs > functions/api/job_schemas.py
    import pprint

    print('"""Generated by `python -m functions.api.jobs > functions/api/job_schemas.py` from its models: do not edit.')
    print("\nThe enqueue routes validate with these (functions/api/enqueue_routes.py) without importing pydantic;")
    print('tests/unit/api/test_cold_start.py fails if they differ from the models."""\n')
    for name, schema in core_schemas().items():
        print(f"\n{name} = {pprint.pformat(schema, width=120, sort_dicts=False)}")
