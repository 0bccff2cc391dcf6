"""Who may call what, as a middleware: tenant keys open /v1, operator keys open /operator.

The tenant lands in the resolver's context. The dashboard's files are public (they hold no
data; the page sends the key the user typed with each data call).
"""

from __future__ import annotations

from collections.abc import Callable

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from functions.api.responses import error_response
from shared import operators, tenants

PUBLIC_PATHS = {"/v1/openapi.json"}
PUBLIC_PREFIXES = ("/dashboard",)
OPERATOR_PREFIX = "/operator/"


def _bearer(app: APIGatewayHttpResolver) -> str:
    scheme, _, key = app.current_event.headers.get("authorization", "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" else ""


def authenticate(app: APIGatewayHttpResolver, next_middleware: Callable[..., Response]) -> Response:
    path = app.current_event.path
    if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
        return next_middleware(app)
    if path.startswith(OPERATOR_PREFIX):
        if not operators.is_operator(_bearer(app)):
            return error_response(
                401, "unauthorized", "missing or unknown operator key; send 'Authorization: Bearer <operator key>'"
            )
        return next_middleware(app)
    tenant = tenants.tenant_for(_bearer(app))
    if tenant is None:
        return error_response(401, "unauthorized", "missing or unknown API key; send 'Authorization: Bearer <key>'")
    app.append_context(tenant=tenant)
    return next_middleware(app)
