"""When and how long to wait before trying a request again.

A request is tried again after: a connection that never opened (nothing was sent), 429 and 503
(the API did nothing), and, for requests that are safe to repeat (GET, DELETE, and enqueues, which
carry an idempotency key), a connection dropped or timed out after sending, and 502/504 gateway
answers. Waits are exponential with full jitter, and never shorter than the answer's `Retry-After`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import requests

RETRY_ALWAYS = frozenset({429, 503})  # the API refused before doing anything
RETRY_IF_IDEMPOTENT = frozenset({502, 504})  # a gateway gave up; the function may have run


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4  # tries after the first
    base_seconds: float = 0.2
    cap_seconds: float = 5.0
    max_retry_after_seconds: float = 60.0  # a longer Retry-After is not waited for: the error is raised

    def backoff(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds before retry number `retry` (1-based)."""
        wait = random.uniform(0, min(self.cap_seconds, self.base_seconds * 2 ** (retry - 1)))
        return max(wait, retry_after or 0.0)


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` as seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def never_sent(error: requests.RequestException) -> bool:
    """True if the request cannot have reached the server (the connection never opened)."""
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return True
    if isinstance(error, requests.exceptions.ConnectionError):
        reason = error.args[0] if error.args else None
        text = repr(reason)
        return "NewConnectionError" in text or "NameResolutionError" in text or "ConnectionRefused" in text
    return False


def retryable_exception(error: requests.RequestException, *, idempotent: bool) -> bool:
    if never_sent(error):
        return True
    return idempotent and isinstance(error, requests.exceptions.ConnectionError | requests.exceptions.Timeout)


def retryable_status(status: int, *, idempotent: bool) -> bool:
    return status in RETRY_ALWAYS or (idempotent and status in RETRY_IF_IDEMPOTENT)


__all__ = ["RetryPolicy"]
