"""The job types workers can run. Adding one is one decorated function here.

A job function takes the payload and a JobContext and returns a JSON-able result;
raising fails the attempt (it is retried with backoff up to max_attempts). Raising
JobFailed(retry=False) gives up at once (dead, no retry); RetryAfter(seconds) says when to
retry. A job type may validate its payload at enqueue by raising InvalidPayload.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared import settings


@dataclass(frozen=True)
class JobContext:
    job_id: str
    attempt: int
    max_attempts: int
    tenant: str = ""

    @property
    def idempotency_key(self) -> str:
        """Stable across attempts and duplicate deliveries: key external side effects on it."""
        return self.job_id


JobFunction = Callable[[Any, JobContext], Any]
PayloadValidator = Callable[[Any], None]  # raises InvalidPayload


@dataclass(frozen=True)
class JobType:
    name: str
    run: JobFunction
    chaos: bool  # only deployed where fault injection is allowed (the local profile)
    validate: PayloadValidator | None = None  # called at enqueue (and when a schedule is created)


_REGISTRY: dict[str, JobType] = {}


def job_type(
    name: str, *, chaos: bool = False, validate: PayloadValidator | None = None
) -> Callable[[JobFunction], JobFunction]:
    def register(function: JobFunction) -> JobFunction:
        _REGISTRY[name] = JobType(name=name, run=function, chaos=chaos, validate=validate)
        return function

    return register


def _chaos_enabled() -> bool:
    return settings.env("CORRAL_CHAOS_JOB_TYPES", "0") == "1"


def lookup(name: str) -> JobType | None:
    found = _REGISTRY.get(name)
    if found is None or (found.chaos and not _chaos_enabled()):
        return None
    return found


def names() -> list[str]:
    return sorted(name for name in _REGISTRY if lookup(name))


class JobFailed(Exception):
    """A job's own, expected failure, its message recorded as the error.

    retry=True: retried with backoff while attempts are left. retry=False: dead now, no retry
    (the failure is permanent: a 4xx answer, a refused target, a payload that cannot work).
    """

    def __init__(self, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


class RetryAfter(JobFailed):
    """A transient failure that knows when to try again (e.g. an HTTP Retry-After): retried after `seconds`."""

    def __init__(self, seconds: float, message: str) -> None:
        super().__init__(message, retry=True)
        self.seconds = max(0.0, seconds)


class InvalidPayload(ValueError):
    """A payload its job type can never run; `field` is the path inside the payload ("" for the whole)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


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


# Job types defined in their own modules register themselves on import.
from shared import http_jobs  # noqa: E402, F401
