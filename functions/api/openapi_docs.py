"""The OpenAPI document's error shape (every route's error answers, declared once) and its sections.

Imported only when routes are declared or the document is built (functions/api/resolver.py), never
on the enqueue path: pydantic and the resolver's OpenAPI models cost more to import than boto3.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from shared import settings


class FieldProblemOut(BaseModel):
    field: str
    message: str


class ErrorOut(BaseModel):
    """Every 4xx/5xx body. `field`/`fields` name the input at fault, when one is."""

    error: str
    message: str
    field: str | None = None
    fields: list[FieldProblemOut] | None = None
    retry_after_seconds: int | None = None  # rate_limited: as the Retry-After header
    quota: str | None = None  # quota_exceeded / forbidden: the quota's name, its limit and the count held
    limit: float | None = None
    count: float | None = None  # quota_exceeded: what the tenant holds (the firings budget: firings per minute)
    scope: str | None = None  # insufficient_scope: the key's scope, and the scopes that open the route
    needed_scopes: list[str] | None = None


ERRORS: dict[int, str] = {
    400: "malformed_json: the body is not JSON (any Content-Type is read as JSON)",
    401: "unauthorized: no key, or an unknown one (checked before the body is read)",
    403: "insufficient_scope: this API key's scope does not open the route (`scope`: the key's, `needed_scopes`:"
    " those that do; checked before the body is read); or forbidden: the request alone is larger than a quota of"
    " this tenant's (named in the message). A retry never helps: use a key of a scope that opens the route, or the"
    " operator can raise the limit",
    404: "not_found: no such job or schedule for this key's tenant, or no such route",
    409: "conflict: the resource's state does not allow this (e.g. the schedule name is taken, or another"
    " request is creating or deleting that schedule right now); with field idempotency_key: the key was used"
    " for another request",
    413: f"payload_too_large: a payload over {settings.MAX_PAYLOAD_BYTES} bytes serialised,"
    f" or a body over {settings.MAX_REQUEST_BODY_BYTES} bytes",
    422: "invalid_request: a field is invalid (named in field/fields), including a payload nested deeper than"
    f" {settings.MAX_PAYLOAD_DEPTH} levels or holding NaN/Infinity",
    429: "rate_limited: the tenant's enqueue rate limit, which every write counts against (each job enqueued,"
    " each job a bulk retry re-sends or a batch cancel cancels; one per retry, cancel, schedule create or delete"
    " and secret rotation;"
    " nothing was done): retry after the Retry-After header's seconds; or quota_exceeded: the tenant holds"
    " its quota (the message names it and the count), a retry helps once it holds less (e.g. deleting schedules)",
    500: "internal_error: a bug; it has been logged",
    503: "unavailable: AWS briefly failed or was too slow; nothing was changed: retry with backoff"
    " (with an idempotency_key, a retry is safe)",
}


# The reference's sections, in the order a reader looks for them: every route names one (`tags=[...]`).
TAGS: dict[str, str] = {
    "jobs": "Enqueue jobs, follow them, cancel and retry them; the tenant's counts",
    "batches": "Jobs enqueued and counted as one, with callbacks when they have all ended",
    "schedules": "Recurring and one-time jobs: create, change, pause, run now, backfill",
    "events": "Events and tokens that resume waiting durable jobs (docs/guides/durable-jobs.md)",
    "triggers": "Events that start jobs: each event of a trigger's name whose data holds its match starts its job",
    "signing secrets": "The secrets HTTP jobs' requests are signed with: rotate, expire, one set per destination",
    "operator": "The queue and worker view, for an operator key (co_...), not a tenant's",
}


def answer(model: type[BaseModel], description: str) -> OpenAPIResponse:
    """A success's declaration: what it means, and the shape of its body (functions/api/answers.py)."""
    return {"description": description, "content": {"application/json": {"model": model}}}


def documented(answers: dict[int, OpenAPIResponse], *errors: int) -> dict[int, OpenAPIResponse]:
    """A route's OpenAPI responses: `answers`, its successes (`answer(...)`) and any error it explains in
    its own words, then the `errors` it can answer as ERRORS says them; every error shaped like ErrorOut."""
    shared = (401, 422, 500, 503)  # every route: the key, validation, a bug, AWS
    error_shape = {"application/json": {"model": ErrorOut}}
    declared = {
        code: {**response, "content": error_shape} if code >= 400 else response for code, response in answers.items()
    }
    codes = sorted({*errors, *shared} - set(answers))
    return declared | {code: {"description": ERRORS[code], "content": error_shape} for code in codes}


SCOPES_EXTENSION = "x-corral-scopes"


def complete_error_responses(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document with every operation declaring the errors any route can answer, and each
    tenant route the API key scopes that open it (`x-corral-scopes`, and a line of its description).

    A safety net for routes declared without `documented(...)`: the key, validation, a bug and
    AWS on all; a bad or oversized body where there is one; 404 where the path names something;
    403 where a key's scope can refuse it. Powertools' own 422 (`HTTPValidationError`, a shape this
    API never answers) is replaced.
    """
    from functions.api.auth import ROUTE_SCOPES  # the one table of scopes (the handler enforces it)
    from shared.tenants.scopes import opening

    error_schema = {"$ref": "#/components/schemas/ErrorOut"}
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            codes = {401, 422, 500, 503}
            if method.upper() in ("POST", "PUT", "PATCH"):
                codes |= {400, 413}
            if "{" in path:
                codes.add(404)
            needed = ROUTE_SCOPES.get((method.upper(), path.replace("{", "<").replace("}", ">")))
            if needed is not None:
                codes.add(403)
                scopes = [scope.value for scope in opening(needed)]
                operation[SCOPES_EXTENSION] = scopes
                line = "API key scope: " + " or ".join(f"`{scope}`" for scope in scopes) + "."
                operation["description"] = (
                    f"{operation['description']}\n\n{line}" if operation.get("description") else line
                )
            responses = operation.setdefault("responses", {})
            for code in sorted(codes):
                declared = responses.get(str(code))
                if declared is None or "HTTPValidationError" in json.dumps(declared) or code == 403:
                    responses[str(code)] = {
                        "description": ERRORS[code],
                        "content": {"application/json": {"schema": error_schema}},
                    }
    return schema


def in_reading_order(schema: dict[str, Any], declared: list[tuple[str, str]]) -> dict[str, Any]:
    """The document with its operations grouped by tag in `TAGS`' order and, within a tag, in the order the
    routes were declared (`declared`: (METHOD, path) pairs), where Powertools lists every route with a path
    parameter before the others. Swagger UI at /docs and docs/reference/api.md show them in this order."""
    position = {route: index for index, route in enumerate(declared)}
    sections = list(TAGS)

    def place(entry: tuple[str, str, dict[str, Any]]) -> tuple[int, int]:
        path, method, operation = entry
        tags = operation.get("tags") or []
        section = sections.index(tags[0]) if tags and tags[0] in TAGS else len(sections)
        return section, position.get((method.upper(), path), len(position))

    operations = [
        (path, method, operation) for path, item in schema["paths"].items() for method, operation in item.items()
    ]
    paths: dict[str, dict[str, Any]] = {}
    for path, method, operation in sorted(operations, key=place):
        paths.setdefault(path, {})[method] = operation
    return schema | {"paths": paths}
