"""Events and tokens that resume waiting durable jobs (docs/decisions/durable-jobs.md): send an event, complete a
token with the tenant's key, or without a key through the token's capability URL."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from functions.api.answers import EventOut, TokenCompletedOut
from functions.api.caller import Tenant
from functions.api.openapi_docs import answer, documented
from functions.api.responses import json_response
from shared.durable import limits
from shared.store.id_secret import id_secret
from shared.tenants import rate_limit
from shared.waits import sending, tokens

router = APIGatewayHttpRouter()

_TOKEN_ID = Path(max_length=64)
_TOKEN_404 = {404: {"description": "not_found: no such token (an unknown id, another tenant's, a wrong capability)"}}
_TOKEN_409 = {409: {"description": "conflict: the token was completed already, has expired, or its job was cancelled"}}


class EventIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=limits.MAX_EVENT_NAME_CHARS, description="The event's name")
    data: Any = Field(
        default=None,
        description=f"Any JSON (at most {limits.MAX_STEP_RESULT_BYTES} bytes): what the waits it resumes answer; "
        "a wait's `match` is checked against its top-level keys",
    )
    id: str | None = Field(
        default=None,
        min_length=1,
        max_length=limits.MAX_EVENT_ID_CHARS,
        description="The event's own id: the same id sent twice is one event",
    )


class TokenCompleteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data: Any = Field(default=None, description="What the waiting job's wait_for_token answers (any JSON)")


@router.post(
    "/v1/events",
    tags=["events"],
    summary="Send an event: it resumes every waiting job of this tenant whose wait it matches",
    description=(
        "A job waiting in `context.wait_for_event(step, name, match=...)` resumes with the event's `data` when its "
        "`name` is the wait's and its data holds every key and value of the wait's `match`; only this tenant's "
        "jobs. An event sent after the step before the wait started is found by the wait too (a look back of up "
        "to 24 h). It also starts one job for each of the tenant's triggers on its name whose match its data holds "
        "(POST /v1/triggers), once per event id. Counts one job against the tenant's rate limit, and one more for "
        "each of its triggers on the name."
    ),
    responses=documented({202: answer(EventOut, "Accepted: the waits it matches resume shortly")}, 409, 413, 429),
)
def send_event(tenant: Tenant, event: Annotated[EventIn, Body()]) -> Response[dict[str, Any]]:
    return json_response(202, {"id": sending.send(tenant, event.name, event.data, event.id)})


@router.post(
    "/v1/tokens/<token_id>:complete",
    tags=["events"],
    summary="Complete a durable job's token: the job waiting for it resumes with `data`",
    description="Once: a second completion answers 409, as does an expired token or one whose job was cancelled.",
    responses=documented({200: answer(TokenCompletedOut, "Completed"), **_TOKEN_404, **_TOKEN_409}, 413, 429),
)
def complete_token(
    tenant: Tenant, token_id: Annotated[str, _TOKEN_ID], completion: Annotated[TokenCompleteIn, Body()]
) -> Response[dict[str, Any]]:
    rate_limit.check(tenant)
    return json_response(200, tokens.complete(tenant, token_id, completion.data))


@router.post(
    "/v1/tokens/<token_id>/<capability>:complete",
    tags=["events"],
    summary="Complete a token through its capability URL, without an API key (the `url` create_token answered)",
    description=(
        "The URL is the credential: any JSON body completes the token once, with that body as its data (an approve "
        "button behind a link in an email; a GET completes nothing). 404 for a wrong capability, as for an unknown "
        "token; 409 once it is completed, expired or cancelled."
    ),
    responses=documented({200: answer(TokenCompletedOut, "Completed"), **_TOKEN_404, **_TOKEN_409}, 413, 429),
)
def complete_token_by_url(
    token_id: Annotated[str, _TOKEN_ID],
    capability: Annotated[str, Path(max_length=64)],
    data: Annotated[Any, Body()] = None,
) -> Response[dict[str, Any]]:
    tenant = tokens.tenant_of(token_id, capability, id_secret())
    rate_limit.check(tenant)
    return json_response(200, tokens.complete(tenant, token_id, data))
