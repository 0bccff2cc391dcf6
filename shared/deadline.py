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
from shared.job_types import JobTimedOut
from shared.model import JobMessage

# Time a claim and a message's visibility outlast the job's timeout: to record the outcome, and
# for clock and scheduling slack. Short on purpose: it is how much later than its timeout a
# crashed job comes back.
MARGIN_SECONDS = 10


class _Expired(BaseException):
    """Raised into the job by the alarm. A BaseException, so a job's own `except Exception` cannot swallow it."""


def timeout_of(message: JobMessage) -> int:
    """The job's timeout: its own, else its type's, within what this worker can give (CORRAL_JOB_TIMEOUT_CEILING)."""
    found = job_types.lookup(message.type)
    wanted = found.timeout_for(message.timeout_seconds) if found else settings.DEFAULT_JOB_TIMEOUT_SECONDS
    return max(1, min(wanted, ceiling_seconds()))


def ceiling_seconds() -> int:
    """The longest attempt this worker can run: its invocation timeout less the start reserve (the stack sets it)."""
    return int(settings.env("CORRAL_JOB_TIMEOUT_CEILING", str(settings.MAX_JOB_TIMEOUT_SECONDS)))


# Never start a job with less than this left of the invocation, whatever its timeout.
MIN_SECONDS_LEFT_TO_START = 2.0


def seconds_needed_to_start(message: JobMessage) -> float:
    """How much of the invocation must be left to start the job: its timeout and the reserve to record it."""
    return max(MIN_SECONDS_LEFT_TO_START, timeout_of(message) + settings.JOB_START_RESERVE_SECONDS)


def lease_seconds(timeout: int) -> int:
    """How long a claim holds the job: the attempt's timeout plus the margin, never past the worker's lease."""
    return min(int(settings.env("CORRAL_LEASE_SECONDS")), timeout + MARGIN_SECONDS)


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise JobTimedOut('timed out after N s') in the calling code if it runs longer than `seconds`."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach only the main thread; the invocation timeout is the backstop
        return

    armed = [True]

    def expire(signum: int, frame: Any) -> None:
        if armed[0]:  # not once the job has returned: the alarm must never escape into the worker
            raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
        armed[0] = False
    except _Expired:
        raise JobTimedOut(f"timed out after {seconds} s") from None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def visibility_plan(timeouts: list[int], seconds_left: float) -> list[int]:
    """For a batch run in order: how long each message stays invisible.

    Message i can start no earlier than after messages 0..i-1 ran to their timeouts, so it is
    hidden for the sum of the timeouts up to and including its own, but never longer than the
    invocation can last, plus the margin: if this worker dies, each message comes back when this
    invocation could no longer be running it, not after the queue's visibility timeout (which
    must be at least the worker's 900 s on AWS). A message whose timeout no longer fits when its
    turn comes is handed back then (functions/worker/handler.py), to an invocation with the time.
    """
    plan: list[int] = []
    elapsed = 0
    for timeout in timeouts:
        elapsed += timeout
        plan.append(math.ceil(min(elapsed, seconds_left) + MARGIN_SECONDS))
    return plan


def _planned_timeout(body: str) -> int:
    """A message's timeout read leniently: an unreadable message is buried at its turn, in no time."""
    try:
        data = json.loads(body)
        if data.get("kind") == "outcome":  # an outcome message: recorded in no time, unless it carries a retry to run
            if data.get("status") != "failed":
                return 1
            data = data["job"]
        requested = data.get("timeout_seconds")
        message = JobMessage(
            id="",
            tenant="",
            type=str(data.get("type")),
            payload=None,
            max_attempts=1,
            enqueued_at=0,
            timeout_seconds=requested if isinstance(requested, int) else None,
        )
    except (ValueError, TypeError, AttributeError, RecursionError):
        return 1
    return timeout_of(message)


def hide_batch(receipt_handles: list[str], bodies: list[str], seconds_left: float) -> None:
    """Apply visibility_plan to a received batch (one SQS call per 10 messages).

    Best effort: a failed call changes nothing, and the messages keep the queue's visibility timeout.
    """
    plan = visibility_plan([_planned_timeout(body) for body in bodies], seconds_left)
    queue.set_visibility(list(zip(receipt_handles, plan, strict=True)))
