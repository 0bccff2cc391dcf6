"""Verify that an HTTP job's request came from corral: the receiver's side of `Corral-Signature`.

    Corral-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>[,v1=...]

There is one `v1=` per valid secret (two for 24 hours after a rotation). Verify against the raw
body bytes as received, before parsing them; the timestamp check bounds replays.

    from client.signatures import verify_signature, SignatureVerificationError
    try:
        verify_signature(request.headers, raw_body, secrets=["whsec_..."])
    except SignatureVerificationError:
        return 400

Standard library only, so it can be copied into any receiver.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterable, Mapping

SIGNATURE_HEADER = "Corral-Signature"
DEFAULT_TOLERANCE_SECONDS = 300


class SignatureVerificationError(ValueError):
    """The request is not (or no longer) proven to come from corral."""


def compute_signature(secret: str, timestamp: int, body: bytes) -> str:
    """The hex v1 signature of `body` sent at `timestamp`."""
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def _header(headers: Mapping[str, str] | Iterable[tuple[str, str]], name: str) -> str | None:
    # Anything with .items() (a dict, http.server's Message, a framework's header object), or pairs.
    items = headers.items() if hasattr(headers, "items") else headers
    for key, value in items:
        if key.lower() == name.lower():
            return value
    return None


def verify_signature(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    body: bytes | str,
    secrets: str | Iterable[str],
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    *,
    now: float | None = None,
) -> int:
    """Raise SignatureVerificationError unless a v1 signature matches one of `secrets` and the
    timestamp is within `tolerance` seconds of now. Returns the signed timestamp.

    `headers` is the request's headers: a dict, http.server's `self.headers`, a framework's header
    object, or a list of pairs; names match case-insensitively.
    """
    raw = body.encode() if isinstance(body, str) else bytes(body)
    candidates = [secrets] if isinstance(secrets, str) else list(secrets)
    if not candidates:
        raise SignatureVerificationError("no secret to verify with")
    header = _header(headers, SIGNATURE_HEADER)
    if not header:
        raise SignatureVerificationError(f"no {SIGNATURE_HEADER} header")
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            timestamp = int(value)
        elif key == "v1" and value:
            signatures.append(value)
    if timestamp is None or not signatures:
        raise SignatureVerificationError(f"malformed {SIGNATURE_HEADER} header")
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise SignatureVerificationError(f"timestamp {timestamp} is more than {tolerance}s from now")
    expected = [compute_signature(secret, timestamp, raw) for secret in candidates]
    if not any(hmac.compare_digest(mine, theirs) for mine in expected for theirs in signatures):
        raise SignatureVerificationError("no signature matches any of the secrets")
    return timestamp
