"""API Lambda: HTTP API (payload v2) -> key and its scope -> body checked and parsed once -> route -> domain.

The key is checked first, before anything reads the body, and whether its scope opens the route
(functions/api/auth.py), then the body's size, nesting and numbers (functions/api/body.py). The
enqueue path (POST /v1/jobs, POST /v1/jobs:batch, GET /v1/jobs/{id}) is answered by
functions/api/enqueue_routes.py; every other route by the Powertools resolver
(functions/api/resolver.py), built on the first request that needs it. So a cold start imports what an
enqueue needs, not the resolver's OpenAPI models, pydantic, the dashboard or the operator routes
(tests/unit/api/test_cold_start.py keeps it so).
"""

from __future__ import annotations

from typing import Any

# boto3 first, before Powertools: measured, the same imports then cost ~50 ms less in a fresh
# interpreter (1.2x instead of 1.6x `import boto3`; docs/benchmark.md "The API's cost").
import boto3  # noqa: F401

# isort: split
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from functions.api import access_log, auth, body, enqueue_routes
from functions.api.responses import error_answer_result, error_result
from shared import settings
from shared.aws import clients, tracing
from shared.aws.metrics import metrics

logger = Logger(service=access_log.SERVICE)
clients.use_timeouts(
    clients.Timeouts(connect=settings.API_AWS_CONNECT_TIMEOUT_SECONDS, read=settings.API_AWS_READ_TIMEOUT_SECONDS)
)


def _resolver() -> Any:
    from functions.api import resolver  # imported once, by the first request off the enqueue path

    return resolver


def _respond(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    path = str(event.get("rawPath") or "")
    method = str(event.get("requestContext", {}).get("http", {}).get("method", "")).upper()
    tenant = None
    if auth.is_operator_path(path):
        if not auth.is_operator(event.get("headers")):
            return error_result(401, "unauthorized", auth.OPERATOR_UNAUTHORIZED_MESSAGE)
    elif not auth.is_public(path):
        owner = auth.owner_of(event.get("headers"))
        if owner is None:
            return error_result(401, "unauthorized", auth.UNAUTHORIZED_MESSAGE)
        refused = auth.refusal(owner, method, path)
        if refused is not None:
            return refused
        tenant = owner.tenant
    checked = body.check(event) if method in body.METHODS_WITH_BODY else body.CheckedBody(event)
    if isinstance(checked, body.BodyProblem):
        return error_result(checked.status, checked.code, checked.message, field=checked.field)
    found = enqueue_routes.route(method, path) if tenant is not None else None
    if found is not None:
        route, parameter = found
        try:
            return route(tenant, checked.value if method in body.METHODS_WITH_BODY else parameter)
        except Exception as error:  # functions/api/responses.py: one mapping for both paths
            return error_answer_result(error)
    app = _resolver().app
    if tenant is not None:
        app.append_context(tenant=tenant)
    return app.resolve(checked.event, context)


@tracing.capture_handler("corral-api")
@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # The request's trace goes with every message it sends, and on its log line (shared/aws/tracing.py).
    trace_id = tracing.trace_id(tracing.begin_request())
    logger.append_keys(trace_id=trace_id)
    # Every AWS call ends before the function must answer: see shared/aws/clients.py.
    seconds_left = context.get_remaining_time_in_millis() / 1000 - settings.API_ANSWER_MARGIN_SECONDS
    try:
        with clients.deadline(seconds_left):
            response = _respond(event, context)
    except (ClientError, BotoCoreError):  # the key lookup, before the resolver's own handlers apply
        logger.exception("AWS call failed")
        response = error_result(503, "unavailable", "the job service is briefly unavailable; retry with backoff")
    except Exception:
        logger.exception("unhandled error")
        response = error_result(500, "internal_error", "internal error; it has been logged")
    # One line per request: access log, and the emulator returns faster from a Lambda that prints.
    access_log.write(event, context, response.get("statusCode"), trace_id)
    return response
