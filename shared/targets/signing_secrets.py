"""Each tenant's secrets for signing HTTP job requests, and the signature header they make.

One item per tenant in the jobs table (`pk = signing-secrets#<tenant>`) holds the list of
secrets, newest first; a secret with `expires_at` is on its way out. Rotating adds a new
secret and gives the current ones 24 hours to live, so receivers can switch without a gap;
while more than one is valid, a request carries one signature per secret. The plaintext
exists only in that item and in the API answers to its tenant: it is never logged.

Scheme (the one Stripe and Svix users know):
    Corral-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>[,v1=...]
The HMAC key is the secret string's UTF-8 bytes, exactly as the API shows it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from shared import environment, settings
from shared.aws.clients import client

SECRET_PREFIX = "whsec_"
SIGNATURE_HEADER = "Corral-Signature"
_WRITE_CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class SigningSecret:
    id: str
    secret: str
    created_at: float
    expires_at: float | None = None  # None: current; otherwise valid until then (rotated out)

    def valid_at(self, now: float) -> bool:
        return self.expires_at is None or self.expires_at > now

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "secret": self.secret, "created_at": self.created_at, "expires_at": self.expires_at}


def _table() -> str:
    return environment.current().table


def _key(tenant: str) -> dict[str, Any]:
    return {"pk": {"S": f"signing-secrets#{tenant}"}}


def _new_secret(now: float) -> SigningSecret:
    return SigningSecret(
        id="ss_" + secrets.token_hex(6), secret=SECRET_PREFIX + secrets.token_urlsafe(32), created_at=now
    )


def _to_item(secret: SigningSecret) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": {"S": secret.id},
        "secret": {"S": secret.secret},
        "created_at": {"N": repr(secret.created_at)},
    }
    if secret.expires_at is not None:
        item["expires_at"] = {"N": repr(secret.expires_at)}
    return {"M": item}


def _from_item(value: dict[str, Any]) -> SigningSecret:
    fields = value["M"]
    return SigningSecret(
        id=fields["id"]["S"],
        secret=fields["secret"]["S"],
        created_at=float(fields["created_at"]["N"]),
        expires_at=float(fields["expires_at"]["N"]) if "expires_at" in fields else None,
    )


def _read(tenant: str) -> tuple[list[SigningSecret], int] | None:
    item = client("dynamodb").get_item(TableName=_table(), Key=_key(tenant), ConsistentRead=True).get("Item")
    if item is None:
        return None
    return [_from_item(value) for value in item["secrets"]["L"]], int(item["version"]["N"])


def _write(tenant: str, secrets_: list[SigningSecret], version: int | None) -> bool:
    """Replace the list if nobody else changed it since `version` (None: the item must not exist yet)."""
    condition = "attribute_not_exists(pk)" if version is None else "version = :seen"
    values: dict[str, Any] = {} if version is None else {":seen": {"N": str(version)}}
    try:
        client("dynamodb").put_item(
            TableName=_table(),
            Item={
                **_key(tenant),
                "secrets": {"L": [_to_item(secret) for secret in secrets_]},
                "version": {"N": str((version or 0) + 1)},
            },
            ConditionExpression=condition,
            **({"ExpressionAttributeValues": values} if values else {}),
        )
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True


def active(tenant: str, now: float | None = None) -> list[SigningSecret]:
    """The tenant's valid secrets, newest first; the first call for a tenant creates its first secret."""
    now = time.time() if now is None else now
    for _ in range(_WRITE_CONFLICT_RETRIES):
        stored = _read(tenant)
        if stored is not None:
            return [secret for secret in stored[0] if secret.valid_at(now)]
        _write(tenant, [_new_secret(now)], None)  # a concurrent first call may win instead: read back either way
    raise RuntimeError(f"signing secrets of tenant {tenant!r} kept changing under concurrent writes")


def rotate(tenant: str, now: float | None = None) -> list[SigningSecret]:
    """Add a new current secret; the previous ones stay valid for the grace period (or less, if already set)."""
    now = time.time() if now is None else now
    grace_until = now + settings.SIGNING_SECRET_GRACE_SECONDS
    for _ in range(_WRITE_CONFLICT_RETRIES):
        stored = _read(tenant)
        previous, version = stored if stored is not None else ([], None)
        kept = [
            SigningSecret(s.id, s.secret, s.created_at, s.expires_at if s.expires_at is not None else grace_until)
            for s in previous
            if s.valid_at(now)
        ]
        updated = [_new_secret(now), *kept][: settings.SIGNING_SECRETS_MAX]
        if _write(tenant, updated, version):
            return updated
    raise RuntimeError(f"signing secrets of tenant {tenant!r} kept changing under concurrent writes")


# tenant -> (secrets, read at): a worker reads a tenant's secrets at most once per SIGNING_SECRETS_CACHE_SECONDS.
_cache: dict[str, tuple[list[SigningSecret], float]] = {}
_CACHE_LIMIT = 10_000


def for_signing(tenant: str) -> list[str]:
    """The secrets to sign with now, from a short per-process cache (a rotation reaches it within the bound)."""
    now = time.time()
    cached = _cache.get(tenant)
    if cached is None or now - cached[1] > settings.SIGNING_SECRETS_CACHE_SECONDS:
        if len(_cache) > _CACHE_LIMIT:
            _cache.clear()
        cached = (active(tenant, now), now)
        _cache[tenant] = cached
    return [secret.secret for secret in cached[0] if secret.valid_at(now)]


def signature_header(secrets_: list[str], timestamp: int, body: bytes) -> str:
    signed = str(timestamp).encode() + b"." + body
    signatures = [hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest() for secret in secrets_]
    return ",".join([f"t={timestamp}", *(f"v1={signature}" for signature in signatures)])
