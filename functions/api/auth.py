"""Bearer API keys -> tenant, as a middleware; the tenant lands in the resolver's context."""

from __future__ import annotations

from collections.abc import Callable

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from functions.api.responses import error_response
from shared import tenants

PUBLIC_PATHS = {"/v1/openapi.json"}


def authenticate(app: APIGatewayHttpResolver, next_middleware: Callable[..., Response]) -> Response:
    if app.current_event.path in PUBLIC_PATHS:
        return next_middleware(app)
    header = app.current_event.headers.get("authorization", "")
    scheme, _, api_key = header.partition(" ")
    tenant = tenants.tenant_for(api_key.strip()) if scheme.lower() == "bearer" else None
    if tenant is None:
        return error_response(401, "unauthorized", "missing or unknown API key; send 'Authorization: Bearer <key>'")
    app.append_context(tenant=tenant)
    return next_middleware(app)
