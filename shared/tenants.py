"""API keys and the tenants they belong to. Only a SHA-256 of each key is stored.

Looking a key up (every API request, cached) is one GetItem through the low-level client the
API already holds; minting and revoking use the pynamodb model, imported only there, which
keeps pynamodb out of the API's cold start (docs/benchmark.md, cold start).
"""

from __future__ import annotations

import hashlib
import secrets
import time

from shared import settings
from shared.aws import client

KEY_PREFIX = "ck_"


def _pk(api_key: str) -> str:
    return "apikey#" + hashlib.sha256(api_key.encode()).hexdigest()


def create_key(tenant: str, label: str = "") -> str:
    """Mint a key for `tenant`; the plaintext is returned once and never stored."""
    from datetime import UTC, datetime

    from shared.api_key_model import ApiKey

    api_key = KEY_PREFIX + secrets.token_urlsafe(32)
    ApiKey(_pk(api_key), tenant=tenant, label=label, created_at=datetime.now(UTC)).save(
        condition=ApiKey.pk.does_not_exist()
    )
    return api_key


def revoke_key(api_key: str) -> None:
    from shared.api_key_model import ApiKey

    ApiKey(_pk(api_key)).delete()


# key hash -> (tenant or None, cached until). Keeps the enqueue path to one AWS call.
_cache: dict[str, tuple[str | None, float]] = {}
_CACHE_LIMIT = 10_000
_UNKNOWN_KEY_CACHE_SECONDS = 10


def tenant_for(api_key: str) -> str | None:
    if not api_key.startswith(KEY_PREFIX):
        return None
    pk = _pk(api_key)
    now = time.monotonic()
    cached = _cache.get(pk)
    if cached and cached[1] > now:
        return cached[0]
    item = (
        client("dynamodb")
        .get_item(TableName=settings.env("CORRAL_TABLE", settings.TABLE_NAME), Key={"pk": {"S": pk}})
        .get("Item")
    )
    tenant = item["tenant"]["S"] if item else None
    if len(_cache) > _CACHE_LIMIT:  # a flood of made-up keys must not grow memory without bound
        _cache.clear()
    # Unknown keys are remembered briefly, so a key created a moment ago starts working soon.
    _cache[pk] = (tenant, now + (settings.API_KEY_CACHE_SECONDS if tenant else _UNKNOWN_KEY_CACHE_SECONDS))
    return tenant
