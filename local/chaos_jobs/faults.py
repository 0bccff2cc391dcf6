"""`crash`: a poison job that kills its worker; `bloat`: a result bigger than the store keeps."""

from __future__ import annotations

import os
import signal
from typing import Any

from corral_jobs import JobContext, job_type


def _times(payload: Any) -> int:
    return int(payload.get("times", 1)) if isinstance(payload, dict) else 1


@job_type("crash")
def crash(payload: Any, context: JobContext) -> dict[str, int]:
    """SIGKILLs its own worker process on its first `times` attempts (a poison job)."""
    if context.attempt <= _times(payload):
        os.kill(os.getpid(), signal.SIGKILL)
    return {"survived_on_attempt": context.attempt}


@job_type("bloat")
def bloat(payload: Any, context: JobContext) -> str:
    """Returns a string of `bytes` characters: a result bigger than the store keeps (fault tests)."""
    return "x" * int(payload.get("bytes", 0)) if isinstance(payload, dict) else ""
