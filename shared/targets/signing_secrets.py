"""Each tenant's secrets for signing HTTP job requests, and the signature headers they make.

One item per tenant in the jobs table (shared/store/tenants/signing_secret_items.py) holds the list of
secrets, newest first; a secret with `expires_at` is on its way out. Rotating adds a new
secret and gives the current ones 24 hours to live, so receivers can switch without a gap;
expiring one (a leaked secret) removes it at once, unless it is the last valid one of its set.
While more than one is valid, a request carries one signature per secret and per version. The
plaintext exists only in that item and in the API answers to its tenant: it is never logged.

A secret may be bound to one destination (an origin, `https://hooks.example.com`): requests to that
origin are then signed with its destination's secrets only, and requests elsewhere with the tenant's
unbound ones, so a receiver that leaks its secret hands out nothing another receiver accepts. Each
destination's secrets rotate and expire as a set of their own. The unbound secrets sign requests to
every origin without a set of its own, third parties included: a receiver that verifies
`webhook-signature` (which binds no URL) should hold a destination's secret, not an unbound one.

Each set also holds its next secret, unissued: workers sign with it already, and nobody is shown it.
A rotation issues it and writes the set's next one, so the new secret is on every request at once,
though workers cache a tenant's secrets for SIGNING_SECRETS_CACHE_SECONDS: they knew it before the
rotation. A secret every worker may not know yet (a destination's first, a set's second rotation
within that time, a set written before next secrets) says from when it signs (`signs_from`).

Scheme (docs/decisions/http-jobs.md):
    Corral-Signature: t=<unix seconds>,v1=<hex>[,v1=...],v2=<hex>[,v2=...]
    v1 = HMAC-SHA256(secret, "<t>.<raw body>")
    v2 = HMAC-SHA256(secret, "v2\n<METHOD>\n<url>\n<Corral-Job-Id>\n<t>\n<raw body>")
v2 also binds the request to its method, its URL (scheme://<Host header><path and query>, as sent)
and its job id, so a captured request cannot be replayed to another URL, with another method or
under another job id. v1 binds only the timestamp and body; it stays for receivers written before v2.
The HMAC key is the secret string's UTF-8 bytes, exactly as the API shows it.

Standard Webhooks (https://www.standardwebhooks.com), which maintained libraries verify in most languages:
    webhook-id: <job id>   webhook-timestamp: <t>   webhook-signature: v1,<base64>[ v1,<base64>...]
    v1 = base64(HMAC-SHA256(base64-decoded part of "whsec_<base64>", "<job id>.<t>.<raw body>"))
Secrets are issued in that `whsec_<base64>` form. A secret issued before it (`whsec_` + 43 URL-safe
characters) keeps its string, so Corral-Signature verifies as before; its Standard Webhooks key is the
32 bytes those characters encode (URL-safe base64), which the libraries take only in the standard form,
`standard_secret()`: the API shows it as `standard_webhooks_secret` (docs/decisions/standard-webhooks.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import time
from dataclasses import replace
from typing import Any

from shared import ids, settings
from shared.errors import Conflict, InvalidRequest, NotFound
from shared.store.tenants import signing_secret_items
from shared.store.tenants.signing_secret_items import SigningSecret
from shared.targets.http_policy import TargetPolicy, TargetRefused, check_origin

SECRET_PREFIX = "whsec_"
SIGNATURE_HEADER = "Corral-Signature"
_WRITE_CONFLICT_RETRIES = 5


WEBHOOK_ID_HEADER = "webhook-id"
WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp"
WEBHOOK_SIGNATURE_HEADER = "webhook-signature"
_SECRET_BYTES = 32  # Standard Webhooks asks for 24 to 64
# Secrets issued before the standard form: `secrets.token_urlsafe(32)`, 32 bytes as unpadded URL-safe base64.
_EARLIER_SECRET = re.compile(r"whsec_[A-Za-z0-9_-]{43}")


def _new_secret(now: float, destination: str | None = None, *, issued: bool = True) -> SigningSecret:
    """A fresh secret written now: every worker signs with it from SIGNING_SECRET_KNOWN_AFTER_SECONDS on."""
    key = base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode()
    return SigningSecret(
        id="ss_" + secrets.token_hex(6),
        secret=SECRET_PREFIX + key,
        created_at=now,
        destination=destination,
        issued=issued,
        signs_from=now + settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS,
    )


def _first_secrets(now: float) -> list[SigningSecret]:
    """A tenant's first unbound secret, signing at once (no worker can hold an older list: there is none),
    and its next one."""
    return [replace(_new_secret(now), signs_from=now), _new_secret(now, issued=False)]


def _with_next_secrets(valid: list[SigningSecret], now: float) -> list[SigningSecret]:
    """`valid` with a next secret for every set that has issued secrets and none (a set written before
    next secrets were kept); a set with no issued secret left keeps no next one either."""
    issued_sets = {secret.destination for secret in valid if secret.issued}
    kept = [secret for secret in valid if secret.issued or secret.destination in issued_sets]
    have_next = {secret.destination for secret in kept if not secret.issued}
    return kept + [_new_secret(now, destination, issued=False) for destination in issued_sets - have_next]


def destination_origin(text: str, policy: TargetPolicy) -> str:
    """The origin a destination names (`https://host[:port]`, lower case, the default port left out);
    InvalidRequest naming `destination` for anything else. Read by the parser of HTTP jobs' URLs with
    the stack's rules (`policy`), so a destination is an origin some job could call: a malformed host,
    credentials, a path or query, another scheme (`http://` only where the stack calls plain http) or
    a port no job may call is refused, since a secret bound to it would sign nothing."""
    try:
        target = check_origin(text.strip(), policy, "destination")
    except TargetRefused as refused:
        raise InvalidRequest(refused.field, refused.message) from refused
    return target.origin  # the same spelling as the origin of the requests it will sign, whatever was typed


def _valid(tenant: str, now: float) -> list[SigningSecret]:
    """Every valid secret of the tenant, issued or next; the first call for a tenant creates its first
    secret, and a set without a next secret gets one."""
    for _ in range(_WRITE_CONFLICT_RETRIES):
        stored = signing_secret_items.read(tenant)
        if stored is None:
            # A concurrent first call may win instead: read back either way.
            signing_secret_items.write(tenant, _first_secrets(now), None)
            continue
        valid = [secret for secret in stored[0] if secret.valid_at(now)]
        completed = _with_next_secrets(valid, now)
        if completed == valid or signing_secret_items.write(tenant, _newest_first(completed), stored[1]):
            return completed
    raise RuntimeError(f"signing secrets of tenant {tenant!r} kept changing under concurrent writes")


def _issued(secrets_: list[SigningSecret]) -> list[SigningSecret]:
    return [secret for secret in secrets_ if secret.issued]


def active(tenant: str, now: float | None = None) -> list[SigningSecret]:
    """The tenant's valid issued secrets (what the API shows), newest first; the first call for a tenant
    creates its first secret."""
    return _issued(_newest_first(_valid(tenant, time.time() if now is None else now)))


def rotate(
    tenant: str, now: float | None = None, destination: str | None = None, idempotency_key: str | None = None
) -> list[SigningSecret]:
    """Issue the set's next secret (for `destination`, an origin, or unbound) as its current one, and write
    its next; the previous ones of the set stay valid for the grace period (or less, if already set), the
    other sets as they were. A set without a next secret (a destination's first rotation) gets a fresh
    one, which every worker signs with from its `signs_from`. Returns the issued secrets, newest first.

    With `idempotency_key`, a rotation retried issues nothing: while the secret the key's first rotation
    issued is kept, the same request answers the issued secrets as they stand (that one among them while
    it is valid), and another request with the key is refused (Conflict naming `idempotency_key`).
    Without one, each retry issues a secret, and five retries would push the secret receivers use out of
    its set."""
    now = time.time() if now is None else now
    grace_until = now + settings.SIGNING_SECRET_GRACE_SECONDS
    rotation = None
    if idempotency_key is not None:
        rotation = (ids.request_fingerprint(idempotency_key), ids.request_fingerprint({"destination": destination}))
    for _ in range(_WRITE_CONFLICT_RETRIES):
        stored = signing_secret_items.read(tenant)
        if (
            rotation is not None
            and stored is not None
            and (earlier := _rotated_by(stored[0], rotation, now)) is not None
        ):
            return earlier
        # A tenant's first secret is unbound, whichever set its first rotation is for: every request is signed.
        first = [] if destination is None else _first_secrets(now)
        previous, version = stored if stored is not None else (first, None)
        valid = [s for s in previous if s.valid_at(now)]
        same = [s for s in valid if s.destination == destination]
        others = [s for s in valid if s.destination != destination]
        destinations = {s.destination for s in others if s.destination is not None}
        if destination is not None and not same and len(destinations) >= settings.SIGNING_SECRET_DESTINATIONS_MAX:
            raise Conflict(
                f"at most {settings.SIGNING_SECRET_DESTINATIONS_MAX} destinations have secrets of their own: "
                "expire one destination's secrets first"
            )
        waiting = [s for s in same if not s.issued]
        current = replace(waiting[0], issued=True, created_at=now) if waiting else _new_secret(now, destination)
        current = replace(current, rotation=rotation)
        kept = [replace(s, expires_at=s.expires_at if s.expires_at is not None else grace_until) for s in _issued(same)]
        issued = [current, *kept][: settings.SIGNING_SECRETS_MAX]
        updated = _newest_first([*issued, _new_secret(now, destination, issued=False), *others])
        if signing_secret_items.write(tenant, updated, version):
            return _issued(updated)
    raise RuntimeError(f"signing secrets of tenant {tenant!r} kept changing under concurrent writes")


def _rotated_by(stored: list[SigningSecret], rotation: tuple[str, str], now: float) -> list[SigningSecret] | None:
    """The answer to a rotation whose idempotency key made one of `stored` already: the valid secrets, newest
    first; Conflict if that rotation was another request; None if the key made none of them."""
    made = next((secret for secret in stored if secret.rotation and secret.rotation[0] == rotation[0]), None)
    if made is None:
        return None
    if made.rotation != rotation:
        raise Conflict(
            "this idempotency_key rotated another destination's secrets; a key names one request: use a new key",
            field="idempotency_key",
        )
    return _issued(_newest_first([secret for secret in stored if secret.valid_at(now)]))


def _newest_first(secrets_: list[SigningSecret]) -> list[SigningSecret]:
    return sorted(secrets_, key=lambda secret: secret.created_at, reverse=True)


def expire(tenant: str, secret_id: str, now: float | None = None) -> list[SigningSecret]:
    """Remove one valid issued secret now (a leaked one need not wait out a rotation's 24 hours); returns
    the issued secrets left, newest first. NotFound if the tenant has no valid issued secret with that id
    (an expired secret is already gone); Conflict if it is the tenant's only valid unbound secret: nothing
    would sign then, so rotate first and expire the old one after. A destination's last secret may go
    (with its next one): its requests are then signed with the unbound secrets, which its receiver does
    not know.

    The store and the API drop it at once; a worker that read the list earlier may sign with it for up
    to SIGNING_SECRETS_CACHE_SECONDS more, so receivers should stop accepting it themselves."""
    now = time.time() if now is None else now
    for _ in range(_WRITE_CONFLICT_RETRIES):
        stored = signing_secret_items.read(tenant)
        valid, version = ([s for s in stored[0] if s.valid_at(now)], stored[1]) if stored is not None else ([], None)
        found = [secret for secret in _issued(valid) if secret.id == secret_id]
        if not found:
            raise NotFound(f"no valid signing secret {secret_id!r}")
        expiring = found[0]
        if expiring.destination is None and sum(secret.destination is None for secret in _issued(valid)) == 1:
            raise Conflict(
                f"{secret_id!r} is the only valid signing secret: rotate first (POST /v1/signing-secrets:rotate), "
                "then expire it"
            )
        left = [secret for secret in valid if secret.id != secret_id]
        kept = [s for s in left if s.issued or any(o.issued and o.destination == s.destination for o in left)]
        if signing_secret_items.write(tenant, kept, version):
            return _issued(kept)
    raise RuntimeError(f"signing secrets of tenant {tenant!r} kept changing under concurrent writes")


# tenant -> (secrets, read at): a worker reads a tenant's secrets at most once per SIGNING_SECRETS_CACHE_SECONDS.
_cache: dict[str, tuple[list[SigningSecret], float]] = {}
_CACHE_LIMIT = 10_000


def for_signing(tenant: str, origin: str) -> list[str]:
    """The secrets to sign a request to `origin` with now, from a short per-process cache: its destination's
    issued and next secrets, else the unbound ones. The next secret comes last: receivers hold none for it."""
    now = time.time()
    cached = _cache.get(tenant)
    if cached is None or now - cached[1] > settings.SIGNING_SECRETS_CACHE_SECONDS:
        if len(_cache) > _CACHE_LIMIT:
            _cache.clear()
        cached = (_valid(tenant, now), now)
        _cache[tenant] = cached
    valid = [secret for secret in cached[0] if secret.valid_at(now)]
    own = [secret for secret in valid if secret.destination == origin]
    signing = own if _issued(own) else [secret for secret in valid if secret.destination is None]
    return [secret.secret for secret in _issued(signing)] + [s.secret for s in signing if not s.issued]


def canonical_v2(method: str, url: str, job_id: str, timestamp: int, body: bytes) -> bytes:
    """The message a v2 signature signs. Unambiguous: no field but the last (the body) can hold a newline
    (a method is a token, the URL has no control characters, job ids and timestamps are plain text)."""
    return f"v2\n{method.upper()}\n{url}\n{job_id}\n{timestamp}\n".encode() + body


def signature_header(
    secrets_: list[str],
    timestamp: int,
    body: bytes,
    *,
    method: str | None = None,
    url: str | None = None,
    job_id: str | None = None,
) -> str:
    """The Corral-Signature value: `t`, a v1 per secret, and a v2 per secret when the request's method, URL
    and job id are given (the worker always gives them; without them the header is v1 only)."""
    v1_message = str(timestamp).encode() + b"." + body
    parts = [f"t={timestamp}"]
    parts += [f"v1={_hmac(secret, v1_message)}" for secret in secrets_]
    if method is not None and url is not None and job_id is not None:
        v2_message = canonical_v2(method, url, job_id, timestamp, body)
        parts += [f"v2={_hmac(secret, v2_message)}" for secret in secrets_]
    elif method is not None or url is not None or job_id is not None:
        raise ValueError("v2 needs all of method, url and job_id")
    return ",".join(parts)


def _hmac(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def standard_key(secret: str) -> bytes | None:
    """The HMAC key of the Standard Webhooks signature: the bytes the part after `whsec_` encodes, in
    standard base64 (secrets issued now) or, for a secret issued before the standard form, in unpadded
    URL-safe base64. None for anything else (no secret corral issued)."""
    encoded = secret.removeprefix(SECRET_PREFIX)
    if _EARLIER_SECRET.fullmatch(secret):
        return base64.urlsafe_b64decode(encoded + "=")
    if encoded == secret or len(encoded) % 4:
        return None
    try:
        return base64.b64decode(encoded, validate=True) or None
    except binascii.Error:
        return None


def standard_secret(secret: str) -> str | None:
    """`secret` as the Standard Webhooks libraries read it: `whsec_` + the standard base64 of its key.
    The secret itself for one issued now; for an earlier one, the same key in the form the libraries
    decode (they refuse, or silently misread, URL-safe characters)."""
    key = standard_key(secret)
    return None if key is None else SECRET_PREFIX + base64.b64encode(key).decode()


def public(secret: SigningSecret) -> dict[str, Any]:
    """A secret as the API shows it to its tenant: the stored fields, the form to give a Standard
    Webhooks library, and from when every request of its set carries its signature (`signs_from`: its
    `created_at` when at once, later when workers may not know it yet)."""
    signs_from = secret.created_at if secret.signs_from is None else max(secret.created_at, secret.signs_from)
    return {**secret.public(), "standard_webhooks_secret": standard_secret(secret.secret), "signs_from": signs_from}


def standard_signature(secrets_: list[str], message_id: str, timestamp: int, body: bytes) -> str | None:
    """The webhook-signature value: a `v1,<base64>` per secret, space separated, each keyed by
    standard_key(); None if no secret has a key (never for secrets corral issued)."""
    message = f"{message_id}.{timestamp}.".encode() + body
    keys = [key for secret in secrets_ if (key := standard_key(secret)) is not None]
    if not keys:
        return None
    return " ".join("v1," + base64.b64encode(hmac.new(key, message, hashlib.sha256).digest()).decode() for key in keys)
