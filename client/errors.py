"""Every error the SDK raises: one `CorralError` hierarchy, carrying the HTTP status, the API's error
code and, for invalid input, the field at fault."""

from __future__ import annotations

from typing import Any


class CorralError(Exception):
    """Base of every SDK error. `status` is None when no HTTP answer came (connection errors, waits)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "error",
        field: str | None = None,
        fields: list[dict[str, Any]] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field
        self.fields = fields or []
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f" (field {self.field})" if self.field else ""
        answered = f"{self.status} " if self.status is not None else ""
        return f"{answered}{self.code}: {self.message}{where}"


class Unauthorized(CorralError):
    """401: missing, unknown or revoked API key."""


class Forbidden(CorralError):
    """403: the request alone is larger than a quota of the tenant's (`forbidden`), or the key's scope
    does not open the route (`PermissionDenied`). A retry never helps."""


class PermissionDenied(Forbidden):
    """403 `insufficient_scope`: this API key's scope (`scope`: read, enqueue) does not open the route;
    a key of one of `needed_scopes` does. Mint one with `corral keys create TENANT --scope ...`."""

    scope: str | None = None
    needed_scopes: tuple[str, ...] = ()


class InvalidRequest(CorralError):
    """400/413/415/422: the request was refused as it is; `field` names what is wrong."""


class NotFound(CorralError):
    """404: no such job or schedule for this tenant (another tenant's id answers the same)."""


class Conflict(CorralError):
    """409: the job's state does not allow it (cancel a running job, retry a queued one...)."""


class RateLimited(CorralError):
    """429, after the SDK's own retries."""


class QuotaExceeded(RateLimited):
    """429 `quota_exceeded`: the tenant holds its whole quota (the message names it and the count).
    Not retried by the SDK: it passes once the tenant holds less (e.g. after deleting schedules)."""


class Unavailable(CorralError):
    """503 or a 5xx gateway answer, after the SDK's own retries; nothing was accepted."""


class ServerError(CorralError):
    """500: a bug on the server's side."""


class ConnectionFailed(CorralError):
    """No HTTP answer (refused, dropped, timed out), after the SDK's own retries."""


class WaitTimeout(CorralError):
    """`wait` gave up before the job reached a wanted status; `job` is its last view."""

    def __init__(self, message: str, *, job: dict[str, Any]) -> None:
        super().__init__(message, code="wait_timeout")
        self.job = job


_BY_STATUS: dict[int, type[CorralError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: InvalidRequest,
    415: InvalidRequest,
    422: InvalidRequest,
    429: RateLimited,
    500: ServerError,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}


def from_answer(status: int, body: Any, retry_after: float | None = None) -> CorralError:
    """The error for an API answer: its JSON error body where there is one."""
    body = body if isinstance(body, dict) else {}
    kind = _BY_STATUS.get(status, ServerError if status >= 500 else InvalidRequest)
    if status == 429 and body.get("error") == "quota_exceeded":
        kind = QuotaExceeded
    if status == 403 and body.get("error") == "insufficient_scope":
        kind = PermissionDenied
    error = kind(
        str(body.get("message") or f"the API answered HTTP {status}"),
        status=status,
        code=str(body.get("error") or f"http_{status}"),
        field=body.get("field"),
        fields=body.get("fields"),
        retry_after=retry_after,
    )
    if isinstance(error, PermissionDenied):
        error.scope = body.get("scope")
        error.needed_scopes = tuple(str(scope) for scope in body.get("needed_scopes") or ())
    return error


__all__ = [
    "Conflict",
    "ConnectionFailed",
    "CorralError",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "PermissionDenied",
    "QuotaExceeded",
    "RateLimited",
    "ServerError",
    "Unauthorized",
    "Unavailable",
    "WaitTimeout",
]
