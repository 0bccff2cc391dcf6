"""Targets granted to tenants at deploy: `<target>=acme|globex`, or `<target>=*` for every tenant.

The Lambda allow-list (`corral:lambda_targets`) and the internal hosts HTTP jobs may reach
(`corral:http_private_hosts`) are written this way; each checks its own target, this module the
tenant part.
"""

from __future__ import annotations

from shared.tenants.tenants import TENANT_NAME

EVERY_TENANT = "*"


def split(text: str) -> tuple[str, str | None]:
    """The target and the tenant part of an entry (None when the entry has no `=`)."""
    target, separator, tenant_part = text.strip().partition("=")
    return target.strip(), tenant_part if separator else None


def tenants(target: str, tenant_part: str | None, *, for_what: str) -> frozenset[str]:
    """The tenants an entry grants `target` to; ValueError saying what is wrong. `for_what` finishes
    "name the tenants ..." in that message (e.g. "whose jobs may invoke it")."""
    if tenant_part is None or not tenant_part.strip():
        raise ValueError(
            f"name the tenants {for_what}, e.g. {target}=acme|globex, or {target}={EVERY_TENANT} for every tenant"
        )
    names = frozenset(name.strip() for name in tenant_part.split("|"))
    if EVERY_TENANT in names and len(names) > 1:
        raise ValueError(f"'{EVERY_TENANT}' (every tenant) stands alone, without tenant names")
    for name in names - {EVERY_TENANT}:
        if not TENANT_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a tenant name")
    return names


def allows(granted: frozenset[str], tenant: str | None) -> bool:
    return tenant is not None and (EVERY_TENANT in granted or tenant in granted)
