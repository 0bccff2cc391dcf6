"""A job that fails transiently: an upstream that answers "busy" before it answers.

It fails its first `busy_attempts` attempts (default 1) and asks to be retried after one second,
as it would after an HTTP 503 with `Retry-After: 1`; then it succeeds.
"""

from __future__ import annotations

from typing import Any

from corral_jobs import JobContext, JobFailed, job_type


@job_type("sync_contacts", timeout_seconds=60, max_attempts=4, backoff_base_seconds=1, backoff_cap_seconds=30)
def sync_contacts(payload: dict[str, Any] | None, context: JobContext) -> dict[str, Any]:
    busy_attempts = int((payload or {}).get("busy_attempts", 1))
    if context.attempt <= busy_attempts:
        context.logger.warning("upstream busy", extra={"seconds_left": round(context.seconds_left(), 1)})
        raise JobFailed(f"upstream busy (attempt {context.attempt} of {context.max_attempts})", retry_after=1)
    return {"synced_on_attempt": context.attempt}
