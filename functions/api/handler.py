"""API Lambda: HTTP API (payload v2) -> key -> raw body checks -> Powertools resolver -> domain.

The key is checked first, before anything reads the body, then the body's size, nesting
and numbers (functions/api/body.py); only then does the resolver parse and validate it.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from functions.api import auth, body, dashboard, jobs, operator, schedules, signing_secrets, steering
from functions.api.responses import (
    MAX_FIELD_CHARS,
    complete_error_responses,
    cut,
    error_response,
    error_result,
    quota_exceeded_response,
    rate_limited,
)
from shared import aws, job_types, scheduler, settings
from shared.enqueue import InvalidJob, PayloadTooLarge
from shared.metrics import metrics
from shared.quotas import QuotaExceeded
from shared.rate_limit import RateLimited

logger = Logger(service="corral-api")
aws.use_timeouts(
    aws.Timeouts(connect=settings.API_AWS_CONNECT_TIMEOUT_SECONDS, read=settings.API_AWS_READ_TIMEOUT_SECONDS)
)
job_types.load()  # the registry the API validates jobs against, loaded in the init phase
app = APIGatewayHttpResolver(enable_validation=True)
app.include_router(jobs.router)
app.include_router(schedules.router)
app.include_router(steering.router)
app.include_router(signing_secrets.router)
app.include_router(operator.router)
app.include_router(dashboard.router)


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi() -> Response[str]:
    schema = app.get_openapi_json_schema(
        title="corral", security_schemes={"apiKey": HTTPBearer(description="an API key")}, security=[{"apiKey": []}]
    )
    return Response(
        status_code=200, content_type="application/json", body=json.dumps(complete_error_responses(json.loads(schema)))
    )


def _field(location: tuple[Any, ...]) -> str:
    parts = [str(part) for part in location if part != "body"]
    return cut(".".join(parts) or "body", MAX_FIELD_CHARS)  # a made-up field name can be any length


@app.exception_handler(RequestValidationError)
def invalid_request(error: RequestValidationError) -> Response:
    problems = error.errors()
    if any(problem.get("type") == "json_invalid" for problem in problems):
        return error_response(400, "malformed_json", "request body is not valid JSON")
    fields = [{"field": _field(tuple(p.get("loc", ()))), "message": p.get("msg", "invalid")} for p in problems]
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
    return error_response(422, "invalid_request", summary, fields=fields)


@app.exception_handler(PayloadTooLarge)
def too_large(error: PayloadTooLarge) -> Response:
    return error_response(
        413, "payload_too_large", str(error), fields=[{"field": error.field, "message": error.message}]
    )


@app.exception_handler(InvalidJob)
def invalid_job(error: InvalidJob) -> Response:
    if isinstance(error.__cause__, scheduler.Rejected):
        logger.warning("EventBridge Scheduler rejected a request", extra={"detail": error.__cause__.detail})
    return error_response(422, "invalid_request", str(error), fields=[{"field": error.field, "message": error.message}])


@app.exception_handler(QuotaExceeded)
def quota_exceeded(error: QuotaExceeded) -> Response:
    return quota_exceeded_response(error)


@app.exception_handler(RateLimited)
def over_rate(error: RateLimited) -> Response:
    return rate_limited(error.retry_after_seconds, str(error))


@app.exception_handler([ClientError, BotoCoreError])  # a list: Powertools keys a tuple as one type
def aws_unavailable(error: Exception) -> Response:
    logger.exception("AWS call failed")
    return error_response(503, "unavailable", "the job service is briefly unavailable; retry with backoff")


@app.exception_handler(Exception)
def internal_error(error: Exception) -> Response:
    logger.exception("unhandled error")
    return error_response(500, "internal_error", "internal error; it has been logged")


@app.not_found
def not_found(error: Exception) -> Response:
    path = cut(app.current_event.path, 100)
    return error_response(404, "not_found", f"no route {app.current_event.http_method} {path}")


def _respond(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    path = str(event.get("rawPath") or "")
    if auth.is_operator_path(path):
        if not auth.is_operator(event.get("headers")):
            return error_result(401, "unauthorized", auth.OPERATOR_UNAUTHORIZED_MESSAGE)
    elif not auth.is_public(path):
        tenant = auth.tenant_of(event.get("headers"))
        if tenant is None:
            return error_result(401, "unauthorized", auth.UNAUTHORIZED_MESSAGE)
        app.append_context(tenant=tenant)
    method = str(event.get("requestContext", {}).get("http", {}).get("method", "")).upper()
    checked = body.check(event) if method in body.METHODS_WITH_BODY else event
    if isinstance(checked, body.BodyProblem):
        app.clear_context()
        return error_result(checked.status, checked.code, checked.message, field=checked.field)
    return app.resolve(checked, context)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Every AWS call ends before the function must answer: see shared/aws.py.
    seconds_left = context.get_remaining_time_in_millis() / 1000 - settings.API_ANSWER_MARGIN_SECONDS
    try:
        with aws.deadline(seconds_left):
            response = _respond(event, context)
    except (ClientError, BotoCoreError):  # the key lookup, before the resolver's own handlers apply
        logger.exception("AWS call failed")
        app.clear_context()
        response = error_result(503, "unavailable", "the job service is briefly unavailable; retry with backoff")
    except Exception:
        logger.exception("unhandled error")
        app.clear_context()
        response = error_result(500, "internal_error", "internal error; it has been logged")
    # One line per request: access log, and the emulator returns faster from a Lambda that prints.
    logger.info("request", extra={"path": event.get("rawPath"), "status": response.get("statusCode")})
    return response
