"""The `http` job type: deliver a job as a signed HTTP request to the customer's endpoint.

Payload: {"url", "method"?: POST|GET|PUT|PATCH|DELETE, "headers"?: {name: value}, "body"?: JSON or a string}.
The headers are sent as given; no view of the job shows their values (shared/model/record.py `shown_payload`).
Each attempt resolves the host once, checks the address (shared/targets/http_policy.py) and connects
to that address, with the name in the Host header and as the TLS server name (SNI and the
certificate check). The outcome, by the answer:
    2xx                           succeeded; result {"status", "headers" (RESULT_HEADERS), "body"}
    408, 425, 429, 5xx            retried with backoff, or after Retry-After (capped)
    connection error, timeout     retried with backoff
    3xx                           dead, not followed (the Location is in the error)
    any other 4xx                 dead at once, no retry (status and the start of the body in the error)
    refused address               dead at once (the reason is in the error)
"""

from __future__ import annotations

import json
import re
import ssl
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import cache
from typing import Any

import urllib3
from urllib3.exceptions import HTTPError as TransportError

from shared import environment, settings
from shared.jobs.registry import InvalidPayload, JobContext, JobDead, JobFailed, builtin_job_type
from shared.targets import signing_secrets
from shared.targets.http_policy import (
    ResolutionFailed,
    Resolver,
    Target,
    TargetPolicy,
    TargetRefused,
    check_url,
    resolve,
)

METHODS = ("POST", "GET", "PUT", "PATCH", "DELETE")
RETRYABLE_STATUSES = frozenset({408, 425, 429})  # and every 5xx
# The response headers a result keeps: enough to correlate and to cache, without echoing cookies or auth.
RESULT_HEADERS = ("content-type", "content-length", "etag", "last-modified", "location", "x-request-id")
# Headers the platform sets itself: a payload may not set or override them.
RESERVED_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "te", "upgrade"}
    | {"webhook-id", "webhook-timestamp", "webhook-signature"}  # Standard Webhooks: corral signs these
)
RESERVED_HEADER_PREFIX = "corral-"
USER_AGENT = "corral-http-job/1"
# An HTTP header name (RFC 9110 token). Always `fullmatch`: with `match`, `$` would also match before a
# trailing "\n", and a name like "X-A\n" would pass here only to be refused by http.client at every attempt.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_PAYLOAD_KEYS = frozenset({"url", "method", "headers", "body"})
# What an error says of an internal host's answer whose body the operator has not opened to tenants.
WITHHELD_BODY = b"(body withheld: an internal host)"
_MAX_HEADERS = 50
_READ_CHUNK = 16 * 1024


@dataclass(frozen=True)
class HttpRequest:
    target: Target
    method: str
    headers: dict[str, str]
    body: bytes


def _parse(payload: Any, policy: TargetPolicy) -> HttpRequest:
    """The request a payload describes, or InvalidPayload naming the field."""
    if not isinstance(payload, dict):
        raise InvalidPayload("payload", 'must be an object like {"url": "https://..."}')
    unknown = sorted(set(payload) - _PAYLOAD_KEYS)
    if unknown:
        raise InvalidPayload(
            f"payload.{str(unknown[0])[:64]}", f"unknown field; allowed: {', '.join(sorted(_PAYLOAD_KEYS))}"
        )
    url = payload.get("url")
    if not isinstance(url, str) or not url:
        raise InvalidPayload("payload.url", "required: the URL to call (a string)")
    try:
        target = check_url(url, policy)
    except TargetRefused as refused:
        raise InvalidPayload(f"payload.{refused.field}", refused.message) from refused
    method = payload.get("method", "POST")
    if not isinstance(method, str) or method.upper() not in METHODS:
        raise InvalidPayload("payload.method", f"must be one of {', '.join(METHODS)}")
    method = method.upper()
    headers = _headers(payload.get("headers"))
    body, content_type = _body(payload)
    if method == "GET" and "body" in payload and payload["body"] is not None:
        raise InvalidPayload("payload.body", "a GET request carries no body")
    if content_type and not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = content_type
    return HttpRequest(target=target, method=method, headers=headers, body=body)


def _headers(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InvalidPayload("payload.headers", "must be an object of header names to string values")
    if len(raw) > _MAX_HEADERS:
        raise InvalidPayload("payload.headers", f"at most {_MAX_HEADERS} headers")
    headers: dict[str, str] = {}
    for name, value in raw.items():
        if not _TOKEN.fullmatch(name) or len(name) > 256:
            raise InvalidPayload(f"payload.headers.{name[:64]}", "not a valid header name")
        lowered = name.lower()
        if lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_HEADER_PREFIX):
            raise InvalidPayload(f"payload.headers.{name}", "set by the platform; a job may not set it")
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            raise InvalidPayload(f"payload.headers.{name}", "must be a string without line breaks")
        headers[name] = value
    return headers


def _body(payload: dict[str, Any]) -> tuple[bytes, str | None]:
    """The bytes sent (and signed) and their default content type."""
    body = payload.get("body")
    if body is None:
        return b"", None
    if isinstance(body, str):
        return body.encode(), "text/plain; charset=utf-8"
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(), "application/json"


def validate_payload(payload: Any) -> None:
    """At enqueue: the payload's shape, and a URL that is unsafe on its face (an IP literal, localhost)."""
    _parse(payload, TargetPolicy.from_env())


# Methods a receiver may not expect twice (RFC 9110 9.2.2: GET, PUT and DELETE are idempotent).
NON_IDEMPOTENT_METHODS = frozenset({"POST", "PATCH"})


def needs_exclusive_claim(payload: Any) -> bool:
    """A POST or PATCH runs only under the store's claim, never twice at once during a store outage,
    unless the request carries an Idempotency-Key header: its receiver then drops a repeat itself."""
    if not isinstance(payload, dict):
        return True
    method = str(payload.get("method", "POST")).upper()
    headers = payload.get("headers")
    keyed = isinstance(headers, dict) and any(str(name).lower() == "idempotency-key" for name in headers)
    return method in NON_IDEMPOTENT_METHODS and not keyed


@builtin_job_type(
    "http",
    validate=validate_payload,
    timeout_seconds=settings.HTTP_DEFAULT_TIMEOUT_SECONDS,
    exclusive=needs_exclusive_claim,
)
def http(payload: Any, context: JobContext) -> dict[str, Any]:
    return call(payload, context, TargetPolicy.from_env(context.tenant))


def call(payload: Any, context: JobContext, policy: TargetPolicy, resolver: Resolver | None = None) -> dict[str, Any]:
    try:
        request = _parse(payload, policy)
    except InvalidPayload as invalid:  # enqueued before a policy change, or by a path that skipped validation
        what = "refused" if isinstance(invalid.__cause__, TargetRefused) else "invalid payload"
        raise JobDead(f"{what}: {invalid}; not contacted") from invalid
    try:
        address = resolve(request.target, policy, resolver)
    except TargetRefused as refused:
        raise JobDead(f"refused: {refused.message}; not contacted") from refused
    except ResolutionFailed as error:
        raise JobFailed(str(error)) from error
    timestamp = int(time.time())
    secrets = signing_secrets.for_signing(context.tenant, request.target.origin)
    headers = {
        "User-Agent": USER_AGENT,
        **request.headers,
        "Host": request.target.host_header,
        "Corral-Job-Id": context.job_id,
        "Corral-Attempt": str(context.attempt),
        signing_secrets.SIGNATURE_HEADER: signing_secrets.signature_header(
            secrets,
            timestamp,
            request.body,
            method=request.method,
            url=signed_url(request.target),
            job_id=context.job_id,
        ),
        # Standard Webhooks: the job id is the message id, the same on every attempt, so a receiver can
        # drop a delivery it already handled.
        signing_secrets.WEBHOOK_ID_HEADER: context.job_id,
        signing_secrets.WEBHOOK_TIMESTAMP_HEADER: str(timestamp),
    }
    if (standard := signing_secrets.standard_signature(secrets, context.job_id, timestamp, request.body)) is not None:
        headers[signing_secrets.WEBHOOK_SIGNATURE_HEADER] = standard
    # The job's own timeout stops the attempt anyway (shared/worker/run/cover.py); the request's timeout ends
    # just before it, so a hanging endpoint reads as a timeout of the request, with its host named.
    timeout = max(1.0, min(_timeout_seconds(), context.seconds_left() - 0.5))
    status, reason, response_headers, body, truncated = _send(request, address, headers, timeout)
    withheld = policy.withholds_body(request.target.host)  # an internal service's answer stays internal
    return _outcome(request.target, status, reason, response_headers, b"" if withheld else body, truncated, withheld)


def signed_url(target: Target) -> str:
    """The URL a v2 signature binds: the one the request carries, as its receiver sees it: the scheme, the
    Host header (lower case, default port left out) and the request target (path and query, as sent)."""
    return f"{target.scheme}://{target.host_header}{target.path}"


def _timeout_seconds() -> float:
    # The stack sets this to the longest attempt its worker runs.
    return environment.current().http_timeout_seconds


@cache
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()  # the system's CA bundle; certificates are always checked


def _pool(target: Target, address: str, timeout: float) -> urllib3.HTTPConnectionPool:
    timeouts = urllib3.Timeout(connect=min(timeout, settings.HTTP_CONNECT_TIMEOUT_SECONDS), read=timeout)
    if target.scheme == "https":
        return urllib3.HTTPSConnectionPool(
            address,
            target.port,
            timeout=timeouts,
            retries=False,
            maxsize=1,
            ssl_context=_tls_context(),
            cert_reqs="CERT_REQUIRED",
            server_hostname=target.host,  # SNI names the host, though the socket goes to the checked address
            assert_hostname=target.host,  # and the certificate must be the host's
        )
    return urllib3.HTTPConnectionPool(address, target.port, timeout=timeouts, retries=False, maxsize=1)


def _send(
    request: HttpRequest, address: str, headers: dict[str, str], timeout: float
) -> tuple[int, str, dict[str, str], bytes, bool]:
    deadline = time.monotonic() + timeout
    pool = _pool(request.target, address, timeout)
    try:
        response = pool.urlopen(
            request.method,
            request.target.path,
            body=request.body if request.body or request.method != "GET" else None,
            headers=headers,
            redirect=False,
            retries=False,
            preload_content=False,
            assert_same_host=False,
        )
        try:
            body, truncated = _read_capped(response, settings.HTTP_RESULT_BODY_MAX_BYTES, deadline)
        finally:
            response.release_conn()
    except TransportError as error:
        raise JobFailed(f"{request.target.host}: {_transport_reason(error, timeout)}") from error
    finally:
        pool.close()
    return (
        response.status,
        response.reason or "",
        {k.lower(): v for k, v in response.headers.items()},
        body,
        truncated,
    )


def _transport_reason(error: TransportError, timeout: float) -> str:
    name = type(error).__name__
    if "Timeout" in name:
        return f"timed out after {timeout:.0f}s ({name})"
    return f"{name}: {error}"


def _read_capped(response: urllib3.BaseHTTPResponse, limit: int, deadline: float) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body; True if there was more. A trickling body is cut at the deadline."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        if time.monotonic() > deadline:
            raise urllib3.exceptions.ReadTimeoutError(None, None, "the response body did not arrive in time")  # type: ignore[arg-type]
        chunk = response.read(_READ_CHUNK)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:limit], True


def _decoded(body: bytes, truncated: bool) -> Any:
    if not body:
        return None
    if not truncated:
        try:
            return json.loads(body)
        except ValueError:
            pass
    return body.decode("utf-8", errors="replace")


def _body_start(body: bytes) -> str:
    text = " ".join(body[: settings.HTTP_ERROR_BODY_BYTES].decode("utf-8", errors="replace").split())
    return text or "(empty body)"


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A Retry-After header (seconds or an HTTP date) as seconds from now, capped; None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - now
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return min(max(seconds, 1.0), settings.HTTP_RETRY_AFTER_CAP_SECONDS)  # at least 1 s: no tight loop


def _outcome(
    target: Target,
    status: int,
    reason: str,
    headers: dict[str, str],
    body: bytes,
    truncated: bool,
    withheld: bool = False,
) -> dict[str, Any]:
    answer = f"HTTP {status}{' ' + reason if reason else ''} from {target.host}"
    if 200 <= status < 300:
        result: dict[str, Any] = {
            "status": status,
            "headers": {name: headers[name] for name in RESULT_HEADERS if name in headers},
            "body": _decoded(body, truncated),
        }
        if withheld:
            result["body_withheld"] = True
        elif truncated:
            result["truncated"] = True
        return result
    if withheld:
        body = WITHHELD_BODY
    if 300 <= status < 400:
        location = headers.get("location", "(none)")
        raise JobDead(f"{answer}: redirect not followed; Location: {location[:500]}")
    if status in RETRYABLE_STATUSES or 500 <= status < 600:
        wait = retry_after_seconds(headers.get("retry-after"), time.time())
        message = f"{answer}: {_body_start(body)}"
        if wait is not None:
            raise JobFailed(f"{message} (Retry-After {wait:.0f}s)", retry_after=wait)
        raise JobFailed(message)
    if 400 <= status < 500:
        raise JobDead(f"{answer}: {_body_start(body)}")
    raise JobFailed(f"{answer}: unexpected status")
