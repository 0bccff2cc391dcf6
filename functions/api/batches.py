"""Batches: create (jobs counted as one, with callbacks), get, list, cancel (shared/batches/batches.py)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from functions.api.answers import BatchCreatedOut, BatchJobsOut, BatchOut, BatchPageOut
from functions.api.caller import Tenant
from functions.api.job_bodies import item_field, parse_job
from functions.api.models import callback_model, idempotency_key_field
from functions.api.openapi_docs import answer, documented
from functions.api.responses import json_response
from shared import settings
from shared.aws.metrics import jobs_enqueued
from shared.batches import batches, callbacks
from shared.errors import InvalidRequest
from shared.jobs.enqueue import JobRequest
from shared.store.batches.batch_items import RUNNING, STATUSES
from shared.tenants import rate_limit

router = APIGatewayHttpRouter()
_BATCH_ID = Path(max_length=64)


OnCompleteIn = callback_model("OnCompleteIn", adds="batch")
OnBatchSuccessIn = callback_model("OnBatchSuccessIn", adds="batch")


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Items are validated one by one (below), so a bad job is named `jobs[i].field`.
    jobs: list[Any] = Field(
        min_length=1,
        max_length=settings.MAX_BATCH_SIZE,
        description="Jobs shaped like POST /v1/jobs bodies (without idempotency_key: a member's id derives from "
        "the batch)",
    )
    on_complete: OnCompleteIn | None = Field(
        default=None, description="A job enqueued once every job has ended; its payload gets `batch`: the batch"
    )
    on_success: OnBatchSuccessIn | None = Field(
        default=None, description="A job enqueued once every job has succeeded; its payload gets `batch`"
    )
    description: str | None = Field(default=None, max_length=settings.MAX_BATCH_DESCRIPTION_CHARS)
    idempotency_key: str | None = idempotency_key_field(
        "The same key is the same batch: the same request again answers as the first did, and none of "
        "its jobs runs twice; another request with the key answers 409 naming idempotency_key"
    )


def _requests(items: list[Any]) -> list[JobRequest]:
    requests: list[JobRequest] = []
    for index, item in enumerate(items):
        parsed = parse_job(item)
        if isinstance(parsed, InvalidRequest):
            raise InvalidRequest(item_field(index, parsed), parsed.message)
        requests.append(parsed)
    return requests


@router.post(
    "/v1/batches",
    tags=["batches"],
    summary=f"Enqueue up to {settings.MAX_BATCH_SIZE} jobs as one batch, with callbacks when they end",
    description=(
        "Every job is checked first: one invalid job refuses the request (422 naming `jobs[i].field`) and nothing "
        "is enqueued. Every job and callback counts against the tenant's rate limit. GET /v1/batches/{id} shows "
        "its counts; `on_complete` runs once every job has ended (succeeded or dead), `on_success` only if all "
        "succeeded, each exactly once. With an idempotency_key, the same request again answers 201 as the first "
        "did (once the first sent every job it sends nothing and counts one); another request with the key "
        "answers 409 naming idempotency_key, and nothing is enqueued."
    ),
    responses=documented(
        {
            201: answer(
                BatchCreatedOut,
                "Created (or, with its idempotency_key, the same request again): the batch, running; "
                "GET /v1/batches/{id} has its counts",
            )
        },
        400,
        403,
        409,
        413,
        429,
    ),
)
def create_batch(tenant: Tenant, batch: Annotated[BatchIn, Body()]) -> Response[dict[str, Any]]:
    request = batches.BatchRequest(**batch.model_dump(exclude={"jobs"}), jobs=_requests(batch.jobs))
    created = batches.create(tenant, request)
    jobs_enqueued(created.total)
    # A new batch is running; a repeat of the request with its key answers as the first did (GET shows it now).
    return json_response(201, {"id": created.id, "status": RUNNING, "total": created.total})


@router.get(
    "/v1/batches",
    tags=["batches"],
    summary="This tenant's batches, newest first (cursor-paginated)",
    description=(
        "Each with its counts. `status` filters after reading (a page may hold fewer than `limit` while "
        f"`next_cursor` is set; each request reads at most {settings.LIST_READ_BUDGET} entries), so a filtered "
        f"request is metered with filtered GET /v1/jobs and GET /v1/stats: {settings.HEAVY_READS_PER_SECOND}/s per "
        f"tenant with bursts of {settings.HEAVY_READS_BURST} (429 over it)."
    ),
    responses=documented({200: answer(BatchPageOut, "A page of batches, newest first, each with its counts")}, 429),
)
def list_batches(
    tenant: Tenant,
    status: Annotated[str | None, Query(description=f"One of {', '.join(STATUSES)}", max_length=32)] = None,
    cursor: Annotated[str | None, Query(max_length=512, description="next_cursor of the previous page")] = None,
    limit: Annotated[int, Query(ge=1, le=settings.BATCH_LIST_MAX_LIMIT)] = settings.BATCH_LIST_DEFAULT_LIMIT,
) -> Response[dict[str, Any]]:
    if status is not None:  # reads up to LIST_READ_BUDGET index entries for one page: metered
        rate_limit.check_heavy_read(tenant)
    page = batches.list_batches(tenant, status=status, cursor=cursor, limit=limit)
    return json_response(200, {"batches": page.batches, "next_cursor": page.next_cursor})


@router.get(
    "/v1/batches/<batch_id>",
    tags=["batches"],
    summary="A batch's status, counts and callbacks",
    responses=documented({200: answer(BatchOut, "The batch, with its counts and callbacks")}, 404),
)
def get_batch(tenant: Tenant, batch_id: Annotated[str, _BATCH_ID]) -> Response[dict[str, Any]]:
    return json_response(200, callbacks.batch_view(batches.get(tenant, batch_id)))


@router.get(
    "/v1/batches/<batch_id>/jobs",
    tags=["batches"],
    summary="The ids of a batch's jobs, in the order they were given",
    responses=documented({200: answer(BatchJobsOut, "Its jobs' ids, in the order they were given")}, 404),
)
def get_batch_jobs(tenant: Tenant, batch_id: Annotated[str, _BATCH_ID]) -> Response[dict[str, Any]]:
    batch = batches.get(tenant, batch_id)
    return json_response(200, {"jobs": batches.member_ids(tenant, batch)})


@router.post(
    "/v1/batches/<batch_id>/cancel",
    tags=["batches"],
    summary="Cancel a batch: its jobs that have not started are cancelled, and it runs no callback",
    description="Idempotent: a cancelled batch answers 200 again at once. A finished batch answers 409 and stays "
    "as it ended. Jobs already running end on their own (retries included) and are counted. Counts one against "
    "the tenant's rate limit per job still pending (all or none, before any is cancelled), one if none is.",
    responses=documented({200: answer(BatchOut, "The batch, status cancelled")}, 404, 409, 429),
)
def cancel_batch(tenant: Tenant, batch_id: Annotated[str, _BATCH_ID]) -> Response[dict[str, Any]]:
    return json_response(200, callbacks.batch_view(batches.cancel(tenant, batch_id)))
