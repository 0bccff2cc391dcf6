"""Bearer API keys -> tenant. Checked before anything reads the request body (functions/api/handler.py)."""

from __future__ import annotations

from collections.abc import Mapping

from shared import tenants

# No key needed: the API's own description, and the dashboard's static page (its data calls need one).
PUBLIC_PATHS = frozenset({"/v1/openapi.json", "/dashboard"})
PUBLIC_PREFIXES = ("/dashboard/",)

UNAUTHORIZED_MESSAGE = "missing or unknown API key; send 'Authorization: Bearer <key>'"


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def tenant_of(headers: Mapping[str, str] | None) -> str | None:
    """The tenant whose key the request carries, or None (no key, another scheme, unknown key)."""
    header = next((value for name, value in (headers or {}).items() if name.lower() == "authorization"), "")
    scheme, _, api_key = header.partition(" ")
    return tenants.tenant_for(api_key.strip()) if scheme.lower() == "bearer" else None
