"""The platform's own job types: small, for trying corral out and for its tests."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from shared.job_types import JobContext, JobFailed, job_type


def _times(payload: Any) -> int:
    return int(payload.get("times", 1)) if isinstance(payload, dict) else 1


@job_type("echo")
def echo(payload: Any, context: JobContext) -> Any:
    return payload


@job_type("sleep")
def sleep(payload: Any, context: JobContext) -> dict[str, float]:
    seconds = float(payload.get("seconds", 0)) if isinstance(payload, dict) else 0.0
    time.sleep(max(0.0, seconds))
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
