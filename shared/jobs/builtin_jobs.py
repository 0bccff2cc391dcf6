"""The platform's own job types: small, for trying corral out and for its tests."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from shared import settings
from shared.jobs.job_types import InvalidPayload, JobContext, JobFailed, job_type


def _times(payload: Any) -> int:
    return int(payload.get("times", 1)) if isinstance(payload, dict) else 1


@job_type("echo")
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


@job_type("sleep", validate=_check_sleep)
def sleep(payload: Any, context: JobContext) -> dict[str, float]:
    try:
        seconds = _sleep_seconds(payload)
    except InvalidPayload as error:  # a message that did not come through the API's check
        raise JobFailed(str(error)) from error
    time.sleep(seconds)
    return {"slept": seconds}


@job_type("fail")
def fail(payload: Any, context: JobContext) -> dict[str, int]:
    """Fails its first `times` attempts, then succeeds."""
    if context.attempt <= _times(payload):
        raise JobFailed(f"failing on purpose (attempt {context.attempt} of the first {_times(payload)})")
    return {"succeeded_on_attempt": context.attempt}


@job_type("crash", chaos=True)
def crash(payload: Any, context: JobContext) -> dict[str, int]:
    """SIGKILLs its own worker process on its first `times` attempts (a poison job)."""
    if context.attempt <= _times(payload):
        os.kill(os.getpid(), signal.SIGKILL)
    return {"survived_on_attempt": context.attempt}


@job_type("bloat", chaos=True)
def bloat(payload: Any, context: JobContext) -> str:
    """Returns a string of `bytes` characters: a result bigger than the store keeps (fault tests)."""
    return "x" * int(payload.get("bytes", 0)) if isinstance(payload, dict) else ""
