"""Tokens: how a durable job waits for a person. `create_token` is a step the worker takes (the jobs
function holds no secret): it mints the token's id and its capability URL, writes the token's item, and
records `{"id", "url"}` as the step's result, so every run of the code sees the same token.

- **The id** (`tk_` + 26 base32 characters, 128 random bits) names the token: it shows in the job's view
  and logs, and `POST /v1/tokens/{id}:complete` with the tenant's API key completes it. It is not a secret.
- **The capability** is HMAC-SHA256(id secret, "token", tenant, id), 160 bits in base32: never stored,
  recomputed from the id and checked in constant time. The **URL** carries both,
  `<api>/v1/tokens/{id}/{capability}:complete`: `POST` to it with any JSON body completes the token
  without a key (an approve button behind a link in an email; a link's GET is never enough, so mail
  scanners that follow links complete nothing). Whoever holds the URL holds the token, as with any
  capability URL; the tenant's key can complete it too.
- **Where it leads:** the token's item (`token#<id>`, shared/store/durable/token_items.py) holds its tenant, job,
  expiry and state, so the keyless request finds the tenant without a key, and a made-up id or
  capability answers 404 exactly like an unknown one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re

from shared.durable import limits

_ID_BYTES = 16
_CAPABILITY_BYTES = 20
ID_PATTERN = re.compile(rf"^{limits.TOKEN_ID_PREFIX}[a-z2-7]{{26}}$")
_CAPABILITY_PATTERN = re.compile(r"^[a-z2-7]{32}$")


def _b32(raw: bytes) -> str:
    return base64.b32encode(raw).decode().rstrip("=").lower()


def mint_id() -> str:
    return limits.TOKEN_ID_PREFIX + _b32(os.urandom(_ID_BYTES))


def is_token_id(text: object) -> bool:
    return isinstance(text, str) and ID_PATTERN.match(text) is not None


def capability(secret: bytes, tenant: str, token_id: str) -> str:
    digest = hmac.new(secret, f"token\0{tenant}\0{token_id}".encode(), hashlib.sha256).digest()
    return _b32(digest[:_CAPABILITY_BYTES])


def verifies(secret: bytes, tenant: str, token_id: str, offered: str) -> bool:
    """Whether `offered` is the token's capability (constant time in what it compares)."""
    if not _CAPABILITY_PATTERN.match(offered or ""):
        return False
    return hmac.compare_digest(offered, capability(secret, tenant, token_id))


def url(api_url: str, secret: bytes, tenant: str, token_id: str) -> str:
    """The token's capability URL on the API: POST to it completes the token without a key."""
    return f"{api_url.rstrip('/')}/v1/tokens/{token_id}/{capability(secret, tenant, token_id)}:complete"


def created(api_url: str, secret: bytes, tenant: str, token_id: str) -> dict[str, str]:
    """create_token's result, as recorded and as the job's code gets it."""
    return {"id": token_id, "url": url(api_url, secret, tenant, token_id)}
