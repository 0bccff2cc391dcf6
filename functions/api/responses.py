"""JSON responses and the error shape every 4xx/5xx shares: {"error": code, "message": text, "field"?, "fields"?}.

An error never echoes the request: anything in it that came from the client (a field name, a
path, an id) is cut to a few dozen characters here, whatever the caller passed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.aws import eventbridge
from shared.errors import Conflict, InvalidRequest, NotFound, PayloadTooLarge, QuotaExceeded, RateLimited, Unavailable

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import Response

MAX_MESSAGE_CHARS = 300
MAX_FIELD_CHARS = 100
MAX_FIELDS = 20


def json_response(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response[dict[str, Any]]:
    # The resolver serialises the dict (and validates it against the route's return type).
    from aws_lambda_powertools.event_handler import Response  # the resolver's routes only: see handler.py

    return Response(status_code=status, content_type="application/json", body=body, headers=headers)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "message": cut(message, MAX_MESSAGE_CHARS)}
    if "field" in details:
        body["field"] = cut(str(details.pop("field")), MAX_FIELD_CHARS)
    if "fields" in details:
        body["fields"] = [
            {"field": cut(str(f.get("field", "")), MAX_FIELD_CHARS), "message": cut(str(f.get("message", "")), 200)}
            for f in details.pop("fields")[:MAX_FIELDS]
        ]
    return body | details


def error_response(status: int, code: str, message: str, **details: Any) -> Response:
    return json_response(status, error_body(code, message, **details))


def no_route_message(method: str, path: str) -> str:
    """The 404 for a path no route matches (the resolver's, and a narrower key's: functions/api/auth.py)."""
    return f"no route {method} {cut(path, 100)}"


def no_route(method: str, path: str, allowed: list[str]) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, body, headers) for a request no route answers: 405 with `Allow` when the path has routes for
    other methods (`allowed`), else 404."""
    if allowed and method not in allowed:
        methods = ", ".join(allowed)
        message = f"{method} is not allowed on {cut(path, 100)}; allowed: {methods}"
        return 405, error_body("method_not_allowed", message), {"Allow": methods}
    return 404, error_body("not_found", no_route_message(method, path)), {}


def json_result(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    """A JSON answer as the Lambda's return value (API Gateway payload 2.0), for answers given without the resolver."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"} | (headers or {}),
        "body": json.dumps(body, separators=(",", ":")),
        "isBase64Encoded": False,
    }


def error_result(status: int, code: str, message: str, **details: Any) -> dict[str, Any]:
    return json_result(status, error_body(code, message, **details))


def problem_field(location: tuple[Any, ...]) -> str:
    """A validation problem's location as a field name: ("body", "jobs", 0) -> "jobs.0"."""
    parts = [str(part) for part in location if part != "body"]
    return cut(".".join(parts) or "body", MAX_FIELD_CHARS)  # a made-up field name can be any length


def invalid_fields(problems: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """The answer to pydantic-shaped validation problems: 400 for JSON that does not parse, else 422 naming fields."""
    if any(problem.get("type") == "json_invalid" for problem in problems):
        return 400, error_body("malformed_json", "request body is not valid JSON")
    fields = [{"field": problem_field(tuple(p.get("loc", ()))), "message": p.get("msg", "invalid")} for p in problems]
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
    return 422, error_body("invalid_request", summary, fields=fields)


# How errors are answered, on every route: by their root class in shared/errors.py. The enqueue
# routes (functions/api/enqueue_routes.py) and the resolver's (functions/api/resolver.py) both look
# them up here. Register a mapping with @answers(ErrorType); the most specific registered class wins.
ErrorAnswer = tuple[int, dict[str, Any], dict[str, str]]  # status, body, extra headers
Answer = Callable[[Any], ErrorAnswer]
_ANSWERS: dict[type[BaseException], Answer] = {}
_log = logging.getLogger("corral-api")


def answers(*error_types: type[BaseException]) -> Callable[[Answer], Answer]:
    def register(answer: Answer) -> Answer:
        for error_type in error_types:
            _ANSWERS[error_type] = answer
        return answer

    return register


def answered_types() -> list[type[BaseException]]:
    return list(_ANSWERS)


def answer_for(error: BaseException) -> ErrorAnswer:
    """The answer to an error a route raised: its mapping, else a logged 500."""
    for error_type in type(error).__mro__:
        if error_type in _ANSWERS:
            return _ANSWERS[error_type](error)
    _log.exception("unhandled error", exc_info=error)
    return 500, error_body("internal_error", "internal error; it has been logged"), {}


def error_answer_result(error: BaseException) -> dict[str, Any]:
    status, body, headers = answer_for(error)
    result = json_result(status, body)
    result["headers"].update(headers)
    return result


@answers(PayloadTooLarge)
def _too_large(error: PayloadTooLarge) -> ErrorAnswer:
    fields = [{"field": error.field, "message": error.message}]
    return 413, error_body("payload_too_large", str(error), fields=fields), {}


@answers(InvalidRequest)
def _invalid(error: InvalidRequest) -> ErrorAnswer:
    """422 naming the field at fault, in `field` and in `fields` (the shape of pydantic's problems)."""
    if isinstance(error.__cause__, eventbridge.Rejected):
        _log.warning("EventBridge Scheduler rejected a request", extra={"detail": error.__cause__.detail})
    named = {"field": error.field} if error.field else {}
    fields = [{"field": error.field, "message": error.message}]
    return 422, error_body("invalid_request", str(error), **named, fields=fields), {}


@answers(QuotaExceeded)
def _quota_exceeded(error: QuotaExceeded) -> ErrorAnswer:
    """429 when holding less would let the request through, 403 when nothing would."""
    status, code = (429, "quota_exceeded") if error.retry_can_help else (403, "forbidden")
    return status, error_body(code, error.message, quota=error.limit_name, limit=error.limit, count=error.count), {}


@answers(RateLimited)
def _rate_limited(error: RateLimited) -> ErrorAnswer:
    """429 with Retry-After (whole seconds, >= 1), also in the body for clients that drop headers."""
    seconds = max(1, int(error.retry_after_seconds))
    return 429, error_body("rate_limited", str(error), retry_after_seconds=seconds), {"Retry-After": str(seconds)}


@answers(NotFound)
def _not_found(error: NotFound) -> ErrorAnswer:
    return 404, error_body("not_found", str(error) or "not found"), {}


@answers(Conflict)
def _conflict(error: Conflict) -> ErrorAnswer:
    return 409, error_body("conflict", str(error), **({"field": error.field} if error.field else {})), {}


@answers(ClientError, BotoCoreError, Unavailable)
def _aws_unavailable(error: Exception) -> ErrorAnswer:
    _log.exception("AWS call failed", exc_info=error)
    return 503, error_body("unavailable", "the job service is briefly unavailable; retry with backoff"), {}
