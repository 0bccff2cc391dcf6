"""Who may call what, checked before anything reads the request body (functions/api/handler.py):
tenant keys open /v1, operator keys open /operator, and the dashboard's files are public (they hold
no data; the page sends the key the user typed with each data call)."""

from __future__ import annotations

from collections.abc import Mapping

from shared.tenants import operators, tenants

# No key needed: the API's own description, its reference page (/docs), and the dashboard's static page (its
# data calls need one).
PUBLIC_PATHS = frozenset({"/v1/openapi.json", "/dashboard", "/docs"})
PUBLIC_PREFIXES = ("/dashboard/",)

OPERATOR_PREFIX = "/operator/"

UNAUTHORIZED_MESSAGE = "missing or unknown API key; send 'Authorization: Bearer <key>'"
OPERATOR_UNAUTHORIZED_MESSAGE = "missing or unknown operator key; send 'Authorization: Bearer <operator key>'"


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def is_operator_path(path: str) -> bool:
    return path.startswith(OPERATOR_PREFIX)


def _bearer(headers: Mapping[str, str] | None) -> str:
    header = next((value for name, value in (headers or {}).items() if name.lower() == "authorization"), "")
    scheme, _, key = header.partition(" ")
    return key.strip() if scheme.lower() == "bearer" else ""


def tenant_of(headers: Mapping[str, str] | None) -> str | None:
    """The tenant whose key the request carries, or None (no key, another scheme, unknown key)."""
    key = _bearer(headers)
    return tenants.tenant_for(key) if key else None


def is_operator(headers: Mapping[str, str] | None) -> bool:
    """Whether the request carries an operator key (never a tenant key: the two kinds open different paths)."""
    return operators.is_operator(_bearer(headers))
