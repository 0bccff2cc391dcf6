"""A job's time: its timeout, the lease its claim holds, and the alarm that stops it.

The timeout is enforced in the worker process with SIGALRM (setitimer), which the Python
runtime delivers to the main thread, where both AWS's runtime and the embedded emulator run
the handler. Python runs the signal handler between bytecodes and interrupts blocking system
calls (sleep, socket reads and connects), so a job stuck in I/O or in Python code is stopped on
time. What it cannot stop: a C extension that holds the thread without returning to the
interpreter (a long regex, a large numpy operation) is stopped when that call returns; a job
that catches BaseException can swallow it. Both are bounded by the invocation's own timeout,
after which the claim's lease runs out and the job is retried like a crashed one.
"""

from __future__ import annotations

import json
import math
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from shared import job_types, queue, settings
from shared.job_types import JobTimedOut, JobType
from shared.model import JobMessage

# Time a claim and a message's visibility outlast the job's timeout: to record the outcome, and
# for clock and scheduling slack. Short on purpose: it is how much later than its timeout a
# crashed job comes back.
MARGIN_SECONDS = 10


class _Expired(BaseException):
    """Raised into the job by the alarm. A BaseException, so a job's own `except Exception` cannot swallow it."""


def timeout_of(message: JobMessage, job_type: JobType | None) -> int:
    """The job's timeout: its own, else its type's, within what this worker can give (CORRAL_JOB_TIMEOUT_CEILING)."""
    wanted = job_type.timeout_for(message.timeout_seconds) if job_type else settings.DEFAULT_JOB_TIMEOUT_SECONDS
    return max(1, min(wanted, ceiling_seconds()))


def ceiling_seconds() -> int:
    return int(settings.env("CORRAL_JOB_TIMEOUT_CEILING", str(settings.MAX_JOB_TIMEOUT_SECONDS)))


def lease_seconds(timeout: int) -> int:
    """How long a claim holds the job: the attempt's timeout plus the margin, never past the worker's lease."""
    return min(int(settings.env("CORRAL_LEASE_SECONDS")), timeout + MARGIN_SECONDS)


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise JobTimedOut('timed out after N s') in the calling code if it runs longer than `seconds`."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach only the main thread; the invocation timeout is the backstop
        return

    def expire(signum: int, frame: Any) -> None:
        raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _Expired:
        raise JobTimedOut(f"timed out after {seconds} s") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def visibility_plan(timeouts: list[int], seconds_left: float) -> list[int | None]:
    """For a batch run in order: how long each message stays invisible, or None to hand it back now.

    Message i can start no earlier than after messages 0..i-1 ran to their timeouts, so it is
    hidden for the sum of the timeouts up to and including its own, plus the margin: if this
    worker dies, each message comes back when this invocation could no longer be running it,
    not after the queue's visibility timeout (which must be >= the worker's 900 s on AWS).
    A message whose worst-case finish does not fit in the invocation's time left is handed back
    at once, to be received by another invocation that has the time.
    """
    plan: list[int | None] = []
    elapsed = 0
    for timeout in timeouts:
        if elapsed + timeout + MARGIN_SECONDS / 2 > seconds_left and plan:
            plan.append(None)
            continue
        elapsed += timeout
        plan.append(math.ceil(min(elapsed, seconds_left) + MARGIN_SECONDS))
    return plan


def _planned_timeout(body: str) -> int:
    """A message's timeout read leniently: an unreadable message is buried at its turn, in no time."""
    try:
        data = json.loads(body)
        requested = data.get("timeout_seconds")
        found = job_types.lookup(str(data.get("type")))
        wanted = found.timeout_for(requested if isinstance(requested, int) else None) if found else 1
    except (ValueError, TypeError, AttributeError):
        return 1
    return max(1, min(wanted, ceiling_seconds()))


def hide_batch(receipt_handles: list[str], bodies: list[str], seconds_left: float) -> set[int]:
    """Apply visibility_plan to a received batch (one SQS call); returns the indexes handed back now.

    A failed call changes nothing: the messages keep the queue's visibility timeout.
    """
    plan = visibility_plan([_planned_timeout(body) for body in bodies], seconds_left)
    hidden = [(handle, seconds or 0) for handle, seconds in zip(receipt_handles, plan, strict=True)]
    queue.set_visibility(hidden)
    return {index for index, seconds in enumerate(plan) if seconds is None}
