"""API Lambda: HTTP API (payload v2) -> Powertools resolver -> domain."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from functions.api import jobs, schedules
from functions.api.auth import authenticate
from functions.api.responses import error_response
from shared import job_types
from shared.enqueue import InvalidJob, PayloadTooLarge
from shared.metrics import metrics

logger = Logger(service="corral-api")
job_types.load()  # the registry the API validates jobs against, loaded in the init phase
app = APIGatewayHttpResolver(enable_validation=True)
app.use(middlewares=[authenticate])
app.include_router(jobs.router)
app.include_router(schedules.router)


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi() -> Response[str]:
    return Response(status_code=200, content_type="application/json", body=app.get_openapi_json_schema(title="corral"))


def _field(location: tuple[Any, ...]) -> str:
    parts = [str(part) for part in location if part != "body"]
    return ".".join(parts) or "body"


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
    return error_response(422, "invalid_request", str(error), fields=[{"field": error.field, "message": error.message}])


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
    return error_response(404, "not_found", f"no route {app.current_event.http_method} {app.current_event.path}")


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    response = app.resolve(event, context)
    # One line per request: access log, and the emulator returns faster from a Lambda that prints.
    logger.info("request", extra={"path": event.get("rawPath"), "status": response.get("statusCode")})
    return response
