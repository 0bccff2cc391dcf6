"""The error shape in the OpenAPI document: every route's error answers, declared once.

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


ERRORS: dict[int, str] = {
    400: "malformed_json: the body is not JSON (any Content-Type is read as JSON)",
    401: "unauthorized: no key, or an unknown one (checked before the body is read)",
    403: "forbidden: the request alone is larger than a quota of this tenant's (named in the message);"
    " a retry never helps: the operator can raise the limit",
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


def documented(success: dict[int, OpenAPIResponse], *errors: int) -> dict[int, OpenAPIResponse]:
    """A route's OpenAPI responses: its successes, then the errors it can answer, shaped like ErrorOut."""
    shared = (401, 422, 500, 503)  # every route: the key, validation, a bug, AWS
    codes = sorted({*errors, *shared})
    return success | {
        code: {"description": ERRORS[code], "content": {"application/json": {"model": ErrorOut}}} for code in codes
    }


def complete_error_responses(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document with every operation declaring the errors any route can answer.

    A safety net for routes declared without `documented(...)`: the key, validation, a bug and
    AWS on all; a bad or oversized body where there is one; 404 where the path names something.
    Powertools' own 422 (`HTTPValidationError`, a shape this API never answers) is replaced.
    """
    error_schema = {"$ref": "#/components/schemas/ErrorOut"}
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            codes = {401, 422, 500, 503}
            if method.upper() in ("POST", "PUT", "PATCH"):
                codes |= {400, 413}
            if "{" in path:
                codes.add(404)
            responses = operation.setdefault("responses", {})
            for code in sorted(codes):
                declared = responses.get(str(code))
                if declared is None or "HTTPValidationError" in json.dumps(declared):
                    responses[str(code)] = {
                        "description": ERRORS[code],
                        "content": {"application/json": {"schema": error_schema}},
                    }
    return schema
