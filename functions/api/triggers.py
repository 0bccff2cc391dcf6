"""/v1/triggers routes (docs/decisions/triggers.md): create, list, get, delete. A create and a delete count one each
against the tenant's rate limit; a trigger holds a unit of its max_triggers quota."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from functions.api import job_bodies
from functions.api.answers import TriggerDeletedOut, TriggerOut, TriggerPageOut
from functions.api.caller import Tenant
from functions.api.openapi_docs import answer, documented
from functions.api.responses import json_response
from shared import settings
from shared.durable import limits
from shared.errors import InvalidRequest
from shared.flow.limits import TRIGGER_NAME_MAX_LENGTH
from shared.waits import triggers

router = APIGatewayHttpRouter()


class EventTriggerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1, max_length=TRIGGER_NAME_MAX_LENGTH, description="A-Z a-z 0-9 _ . -: the trigger's own name"
    )
    event: str = Field(
        min_length=1, max_length=limits.MAX_EVENT_NAME_CHARS, description="The event name it starts a job on"
    )
    match: dict[str, Any] | None = Field(
        default=None,
        description="Keys and values the event's data must hold at its top level, as a durable wait's match "
        "(null or {}: every event of the name)",
    )
    job: dict[str, Any] = Field(
        description="The job each matching event starts: a POST /v1/jobs body, without idempotency_key, run_at, "
        "debounce or unique (its id derives from the event and the trigger). Its payload, an object, gets the "
        "event's data laid over it (data that is not an object goes under `data`)"
    )


def _job_body(body: dict[str, Any]) -> dict[str, Any]:
    """The trigger's job, validated as POST /v1/jobs validates a body (422 naming `job.<field>`), the fields it
    gives only."""
    fields = job_bodies.validate("JOB_IN", body)
    if isinstance(fields, list):
        problem = fields[0]
        where = ".".join(str(part) for part in ("job", *problem["loc"][1:]))
        raise InvalidRequest(where, problem["msg"])
    return {name: fields[name] for name in body if name in fields}


_NAME = Path(max_length=TRIGGER_NAME_MAX_LENGTH)


@router.post(
    "/v1/triggers",
    tags=["triggers"],
    summary="Create a trigger: every event of its name whose data holds its match starts its job",
    description=(
        "Each matching `POST /v1/events` starts one job: the trigger's, its payload the event's data laid over the "
        "trigger's payload, its id derived from the event's id and the trigger's name, so an event sent twice with "
        "one id starts it once. The job shows `started_by`. A name taken answers 409 (delete it first). Counts one "
        "against the tenant's rate limit, and holds one of its max_triggers."
    ),
    responses=documented({201: answer(TriggerOut, "Created: the trigger")}, 400, 403, 409, 413, 422, 429),
)
def post_trigger(tenant: Tenant, trigger: Annotated[EventTriggerIn, Body()]) -> Response[dict[str, Any]]:
    job = _job_body(trigger.job)
    return json_response(201, triggers.create(tenant, trigger.name, trigger.event, trigger.match, job))


@router.get(
    "/v1/triggers",
    tags=["triggers"],
    summary="This tenant's triggers by name (cursor-paginated)",
    description="Pass `next_cursor` back as `cursor` for the next page; null: that was the last.",
    responses=documented({200: answer(TriggerPageOut, "A page of triggers, by name")}, 422),
)
def list_triggers(
    tenant: Tenant,
    limit: Annotated[int, Query(ge=1, le=settings.LIST_MAX_LIMIT)] = settings.LIST_DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512, description="next_cursor of the previous page")] = None,
) -> Response[dict[str, Any]]:
    page = triggers.list_page(tenant, limit=limit, cursor=cursor)
    return json_response(200, {"triggers": page.triggers, "next_cursor": page.next_cursor})


@router.get(
    "/v1/triggers/<name>",
    tags=["triggers"],
    summary="A trigger",
    responses=documented({200: answer(TriggerOut, "The trigger")}, 404, 422),
)
def get_trigger(tenant: Tenant, name: Annotated[str, _NAME]) -> Response[dict[str, Any]]:
    return json_response(200, triggers.get(tenant, name))


@router.delete(
    "/v1/triggers/<name>",
    tags=["triggers"],
    summary="Delete a trigger (the jobs it started stay)",
    description="An event sent after the delete answers starts nothing for it. Counts one against the tenant's "
    "rate limit.",
    responses=documented({200: answer(TriggerDeletedOut, "Deleted (the jobs it started stay)")}, 404, 422, 429),
)
def delete_trigger(tenant: Tenant, name: Annotated[str, _NAME]) -> Response[dict[str, Any]]:
    triggers.delete(tenant, name)
    return json_response(200, {"name": name, "deleted": True})
