"""Verify that an HTTP job's request came from corral: the receiver's side of `Corral-Signature`.

    Corral-Signature: t=<unix seconds>,v1=<hex>[,v1=...],v2=<hex>[,v2=...]
    v2 = HMAC-SHA256(secret, "v2\\n<METHOD>\\n<url>\\n<Corral-Job-Id>\\n<t>\\n<raw body>")
    v1 = HMAC-SHA256(secret, "<t>.<raw body>")

There is one signature per valid secret and version (two secrets for 24 hours after a rotation),
and one more made with the next secret, which nobody holds until a rotation issues it.
v2 binds the method, the URL, the `Corral-Job-Id` header and the body: a request captured at one
of your endpoints does not verify at another, with another method, or under another job id.
v1 binds only the timestamp and the body, so within the timestamp tolerance a captured request
verifies at any of your endpoints, under any job id: accept it only while a receiver cannot pass
the method and URL (`allow_v1=True`).

Verify against the raw body bytes as received, before parsing them; the timestamp check bounds
replays. `url` is the URL the request arrived at: your public scheme, the `Host` header and the
raw request target (path and query as on the request line, not decoded). Behind a proxy that
terminates TLS or rewrites the host, pass your public URL.

    from client.signatures import verify_signature, SignatureVerificationError
    try:
        verify_signature(request.headers, raw_body, secrets=["whsec_..."],
                         method=request.method, url="https://" + request.headers["Host"] + raw_path)
    except SignatureVerificationError:
        return 400

`secrets` are the `secret` strings of GET /v1/signing-secrets: Corral-Signature's HMAC key is the
string's UTF-8 bytes. The same requests also carry the Standard Webhooks headers (`webhook-id`,
`webhook-timestamp`, `webhook-signature`); to verify those instead, use the `standardwebhooks`
package with each secret's `standard_webhooks_secret` (its key is the bytes the base64 encodes):

    from standardwebhooks.webhooks import Webhook
    Webhook(standard_webhooks_secret).verify(raw_body, request.headers, json_parse=False)

`webhook-signature` binds no URL: verify it with a secret bound to your receiver's own origin
(`POST /v1/signing-secrets:rotate {"destination": "https://your.origin"}`). The unbound secrets also
sign the tenant's requests to third parties, which could replay one to any receiver that verifies
`webhook-signature` with an unbound secret. v2 of `Corral-Signature` binds the URL and is safe with either.

Standard library only, so it can be copied into any receiver.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

SIGNATURE_HEADER = "Corral-Signature"
JOB_ID_HEADER = "Corral-Job-Id"
DEFAULT_TOLERANCE_SECONDS = 300
MAX_SIGNATURES = 10  # per version; corral sends at most 6 (5 valid secrets and the next one): more is not corral's
_DEFAULT_PORTS = {"http": 80, "https": 443}


class SignatureVerificationError(ValueError):
    """The request is not (or no longer) proven to come from corral."""


def compute_signature(secret: str, timestamp: int, body: bytes) -> str:
    """The hex v1 signature of `body` sent at `timestamp` (binds neither method, URL nor job id)."""
    return _hmac(secret, str(timestamp).encode() + b"." + body)


def canonical_url(url: str) -> str:
    """`url` as corral signs it: scheme and host in lower case, no trailing dot, the default port left out,
    path "/" when empty, no fragment; path and query otherwise exactly as given."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise SignatureVerificationError(f"not a URL: {error}") from error
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    shown = f"[{host}]" if ":" in host else host
    authority = shown if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{shown}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return f"{scheme}://{authority}{target}"


def canonical_v2(method: str, url: str, job_id: str, timestamp: int, body: bytes) -> bytes:
    """The message a v2 signature signs; `url` as corral sent it (see canonical_url)."""
    return f"v2\n{method.upper()}\n{url}\n{job_id}\n{timestamp}\n".encode() + body


def compute_signature_v2(secret: str, method: str, url: str, job_id: str, timestamp: int, body: bytes) -> str:
    """The hex v2 signature of a request: its method, URL, `Corral-Job-Id`, `timestamp` and body."""
    return _hmac(secret, canonical_v2(method, canonical_url(url), job_id, timestamp, body))


def _hmac(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def _header(headers: Mapping[str, str] | Iterable[tuple[str, str]], name: str) -> str | None:
    # Anything with .items() (a dict, http.server's Message, a framework's header object), or pairs.
    items = headers.items() if hasattr(headers, "items") else headers
    for key, value in items:
        if key.lower() == name.lower():
            return value
    return None


def _parse(header: str) -> tuple[int, list[str], list[str]]:
    """(t, v1 signatures, v2 signatures) of a Corral-Signature value."""
    timestamp: int | None = None
    found: dict[str, list[str]] = {"v1": [], "v2": []}
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isascii() and value.isdigit():  # isdigit alone passes "¹²³", which int() refuses
            timestamp = int(value)
        elif key in found and value and value.isascii() and len(found[key]) < MAX_SIGNATURES:  # compare_digest: ASCII
            found[key].append(value)
    if timestamp is None or not (found["v1"] or found["v2"]):
        raise SignatureVerificationError(f"malformed {SIGNATURE_HEADER} header")
    return timestamp, found["v1"], found["v2"]


def verify_signature(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    body: bytes | str,
    secrets: str | Iterable[str],
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    *,
    method: str | None = None,
    url: str | None = None,
    allow_v1: bool = False,
    now: float | None = None,
) -> int:
    """Raise SignatureVerificationError unless a signature matches one of `secrets` and the timestamp is
    within `tolerance` seconds of now. Returns the signed timestamp.

    With `method` and `url` (the request as this receiver got it) a v2 signature must match; a v1 is not
    looked at when the header has a v2. A header with only v1 signatures is refused unless `allow_v1`.
    Without `method` and `url`, only `allow_v1=True` verifies, and then by v1 alone: weaker, since v1
    does not bind the request to its method, URL or job id.

    `headers` is the request's headers: a dict, http.server's `self.headers`, a framework's header
    object, or a list of pairs; names match case-insensitively.
    """
    if (method is None or url is None) and not allow_v1:
        raise TypeError("verify_signature needs method= and url= (to check v2), or allow_v1=True (v1 only, weaker)")
    raw = body.encode() if isinstance(body, str) else bytes(body)
    candidates = [secrets] if isinstance(secrets, str) else list(secrets)
    if not candidates:
        raise SignatureVerificationError("no secret to verify with")
    header = _header(headers, SIGNATURE_HEADER)
    if not header:
        raise SignatureVerificationError(f"no {SIGNATURE_HEADER} header")
    timestamp, v1, v2 = _parse(header)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise SignatureVerificationError(f"timestamp {timestamp} is more than {tolerance}s from now")
    if method is not None and url is not None and v2:
        job_id = _header(headers, JOB_ID_HEADER)
        if job_id is None:
            raise SignatureVerificationError(f"no {JOB_ID_HEADER} header")
        message = canonical_v2(method, canonical_url(url), job_id, timestamp, raw)
        expected, given = [_hmac(secret, message) for secret in candidates], v2
    elif allow_v1 and v1:
        expected, given = [compute_signature(secret, timestamp, raw) for secret in candidates], v1
    elif v2:
        raise SignatureVerificationError("the request has v2 signatures only: pass method= and url= to verify them")
    else:
        raise SignatureVerificationError(
            "no v2 signature (v1 binds neither the method, the URL nor the job id; allow_v1=True accepts it)"
        )
    if not any(hmac.compare_digest(mine, theirs) for mine in expected for theirs in given):
        raise SignatureVerificationError("no signature matches any of the secrets")
    return timestamp


__all__ = ["SignatureVerificationError", "verify_signature"]  # what a receiver of HTTP jobs needs
