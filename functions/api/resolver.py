"""The Powertools resolver: every route but the enqueue path's, with OpenAPI validation and the document.

Built on the first request that needs it (functions/api/handler.py), not at import: it loads
pydantic, the resolver's OpenAPI models and every router (dashboard, operator, control (cancel, retry), schedules,
signing secrets), several times the import cost of boto3. The jobs router is included too, so
the OpenAPI document describes the enqueue routes that functions/api/enqueue_routes.py answers.
"""

from __future__ import annotations

import json
import re

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer, Tag

from functions.api import (
    auth,
    batches,
    control,
    dashboard_files,
    events,
    jobs,
    operator,
    schedules,
    signing_secrets,
    triggers,
)
from functions.api.openapi_docs import TAGS, complete_error_responses, in_reading_order
from functions.api.responses import (
    answer_for,
    answered_types,
    invalid_fields,
    json_response,
    no_route,
)

# No job type's code is loaded here: the routes that check a job (schedules) read the declarations
# written at synth, as the enqueue routes do (shared/jobs/job_types.py `declared`).
app = APIGatewayHttpResolver(enable_validation=True)
app.include_router(jobs.router)
app.include_router(schedules.router)
app.include_router(control.router)
app.include_router(batches.router)
app.include_router(events.router)
app.include_router(triggers.router)
app.include_router(signing_secrets.router)
app.include_router(operator.router)
app.include_router(dashboard_files.router)


def _declared_routes() -> list[tuple[str, str]]:
    """Every route as (METHOD, OpenAPI path), in the order the routers declare them (Powertools records each
    route's key, "POST/v1/jobs/<job_id>", as it is registered)."""
    routes = []
    for key in app._route_keys:
        method, _, rule = key.partition("/")
        routes.append((method, "/" + re.sub(r"<(\w+)>", r"{\1}", rule)))
    return routes


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi() -> Response[str]:
    schema = app.get_openapi_json_schema(
        title="corral",
        security_schemes={"apiKey": HTTPBearer(description="an API key")},
        security=[{"apiKey": []}],
        tags=[Tag(name=name, description=description) for name, description in TAGS.items()],
    )
    document = in_reading_order(complete_error_responses(json.loads(schema)), _declared_routes())
    return Response(status_code=200, content_type="application/json", body=json.dumps(document))


@app.exception_handler(RequestValidationError)
def invalid_request(error: RequestValidationError) -> Response:
    return json_response(*invalid_fields(error.errors()))


@app.exception_handler(answered_types())
def domain_error(error: Exception) -> Response:
    return json_response(*answer_for(error))


@app.exception_handler(Exception)
def internal_error(error: Exception) -> Response:
    return domain_error(error)  # answer_for logs it and answers 500


@app.not_found
def not_found(error: Exception) -> Response:
    method, path = app.current_event.http_method, app.current_event.path
    return json_response(*no_route(method, path, auth.allowed_methods(path)))
