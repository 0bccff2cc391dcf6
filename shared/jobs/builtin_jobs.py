"""The platform's own job types: small, for trying corral out and for its tests.

The fault tests' types (crash, bloat) are not among them: they are local/chaos_jobs, which only the
local profile deploys."""

from __future__ import annotations

import time
from typing import Any

from shared import settings
from shared.jobs.registry import InvalidPayload, JobContext, JobFailed, builtin_job_type


def _times(payload: Any) -> int:
    return int(payload.get("times", 1)) if isinstance(payload, dict) else 1


@builtin_job_type("echo")
def echo(payload: Any, context: JobContext) -> Any:
    return payload


def _sleep_seconds(payload: Any) -> float:
    seconds = payload.get("seconds", 0) if isinstance(payload, dict) else 0
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not 0 <= seconds <= settings.MAX_SLEEP_SECONDS
    ):
        raise InvalidPayload("payload.seconds", f"must be a number from 0 to {settings.MAX_SLEEP_SECONDS}")
    return float(seconds)


def _check_sleep(payload: Any) -> None:
    _sleep_seconds(payload)


@builtin_job_type("sleep", validate=_check_sleep)
def sleep(payload: Any, context: JobContext) -> dict[str, float]:
    try:
        seconds = _sleep_seconds(payload)
    except InvalidPayload as error:  # a message that did not come through the API's check
        raise JobFailed(str(error)) from error
    # In short naps: a job past its timeout is stopped between two Python instructions
    # (shared/worker/run/cover.py), which a single long sleep would put off until it ends.
    ends = time.monotonic() + seconds
    while (left := ends - time.monotonic()) > 0:
        time.sleep(min(left, 0.1))
    return {"slept": seconds}


@builtin_job_type("fail")
def fail(payload: Any, context: JobContext) -> dict[str, int]:
    """Fails its first `times` attempts, then succeeds."""
    if context.attempt <= _times(payload):
        raise JobFailed(f"failing on purpose (attempt {context.attempt} of the first {_times(payload)})")
    return {"succeeded_on_attempt": context.attempt}
