"""corral's own errors: one root, and one class per answer the API gives.

Domain code raises these (or a subclass that says more); `functions/api/responses.py` maps each
root class to one HTTP status. The job code's own errors (`JobFailed`, `JobDead`, `InvalidPayload`)
are the customer's vocabulary: shared/jobs/registry.py, exported by `corral_jobs`.
"""

from __future__ import annotations


class CorralError(Exception):
    """The root of every error corral raises on purpose."""


class InvalidRequest(CorralError, ValueError):
    """The request cannot be accepted as it is; `field` names the offending input (HTTP 422)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class PayloadTooLarge(InvalidRequest):
    """The request is larger than a limit allows (HTTP 413)."""


class NotFound(CorralError):
    """No such thing for this tenant; another tenant's answers exactly the same (HTTP 404)."""


class Conflict(CorralError):
    """The thing is not in a state that allows this; the message says which and what to do (HTTP 409).
    `field` names the input at fault, where one is (an idempotency key reused for another request)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class QuotaExceeded(CorralError):
    """Taking `requested` more would pass the tenant's `limit_name` (`limit`); it holds `count`.

    A retry helps once the tenant holds less (it deletes schedules, far-future jobs run), unless the
    request alone is larger than the limit: `retry_can_help` says which (HTTP 429 or 403).
    """

    def __init__(
        self, noun: str, limit_name: str, limit: int | float, count: int | float, requested: int | float = 1
    ) -> None:
        self.noun = noun
        self.limit_name = limit_name
        self.limit = limit
        self.count = count
        self.requested = requested
        super().__init__(self.message)

    @property
    def retry_can_help(self) -> bool:
        return self.requested <= self.limit

    @property
    def message(self) -> str:
        text = f"{self.noun} quota reached: {_figure(self.count)} of {_figure(self.limit)} ({self.limit_name})"
        if not self.retry_can_help:
            text += f"; this request needs {_figure(self.requested)}: ask the operator to raise the limit"
        elif isinstance(self.requested, float):  # a weighted quota: say what this request weighs
            text += f"; this request needs {_figure(self.requested)}"
        return text


def _figure(number: int | float) -> str:
    """A count as a message shows it: whole numbers plainly, fractions to three decimals."""
    return f"{number:.3f}".rstrip("0").rstrip(".") if isinstance(number, float) else str(number)


class RateLimited(CorralError):
    """The tenant is over its enqueue rate; retry after `retry_after_seconds` (whole seconds, >= 1; HTTP 429)."""

    def __init__(
        self, retry_after_seconds: int, rate_per_second: float | None = None, burst: int | None = None
    ) -> None:
        limits = "" if rate_per_second is None else f" {rate_per_second:g} jobs/s with bursts of {burst}"
        super().__init__(
            f"enqueue rate limit reached:{limits} (enqueue_rate_per_second, enqueue_burst);"
            f" retry after {retry_after_seconds} s"
        )
        self.retry_after_seconds = retry_after_seconds


class ReadsLimited(RateLimited):
    """The tenant reads its whole index (stats, filtered listings) faster than the read meter allows (HTTP 429)."""

    def __init__(self, retry_after_seconds: int, rate_per_second: float, burst: int) -> None:
        CorralError.__init__(
            self,
            f"read rate limit reached: {rate_per_second:g} stats or filtered listings per second with bursts of"
            f" {burst}; retry after {retry_after_seconds} s",
        )
        self.retry_after_seconds = retry_after_seconds


class Unavailable(CorralError):
    """A service corral depends on failed; retrying with backoff helps (HTTP 503)."""
