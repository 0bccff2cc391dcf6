"""A job's time: its timeout, the lease its claim holds, the alarm that stops it, and how long its
batch's messages stay hidden (`HiddenBatch`).

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
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from shared import environment, settings
from shared.aws import queue
from shared.jobs import job_types
from shared.jobs.job_types import JobTimedOut
from shared.model import JobMessage

# Time a claim and a message's visibility outlast the job's timeout: to record the outcome, and
# for clock and scheduling slack. Short on purpose: it is how much later than its timeout a
# crashed job comes back.
MARGIN_SECONDS = 10


class _Expired(BaseException):
    """Raised into the job by the alarm. A BaseException, so a job's own `except Exception` cannot swallow it."""


def timeout_of(message: JobMessage) -> int:
    """The job's timeout: its own, else its type's, within what this worker can give
    (`FunctionEnv.job_timeout_ceiling`)."""
    found = job_types.lookup(message.type)
    wanted = found.timeout_for(message.timeout_seconds) if found else settings.DEFAULT_JOB_TIMEOUT_SECONDS
    return max(1, min(wanted, ceiling_seconds()))


def ceiling_seconds() -> int:
    """The longest attempt this worker can run: its invocation timeout less the start reserve (the stack sets it)."""
    return environment.current().job_timeout_ceiling


# Never start a job with less than this left of the invocation, whatever its timeout.
MIN_SECONDS_LEFT_TO_START = 2.0


def seconds_needed_to_start(message: JobMessage) -> float:
    """How much of the invocation must be left to start the job: its timeout and the reserve to record it."""
    return max(MIN_SECONDS_LEFT_TO_START, timeout_of(message) + settings.JOB_START_RESERVE_SECONDS)


def lease_seconds(timeout: int) -> int:
    """How long a claim holds the job: the attempt's timeout plus the margin, never past the worker's lease."""
    return min(environment.current().lease_seconds, timeout + MARGIN_SECONDS)


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


def cover_span(running: int, own: int, seconds_left: float) -> int:
    """How long a batch's message, and a claim made ahead for it, must last while a job of timeout
    `running` runs: until that job's timeout (its own, `own`, if longer: it is covered for its own
    turn too), never past what is left of the invocation. A message whose worker dies comes back
    about one job's timeout later, not after the queue's visibility timeout (which must be at least
    the worker's 900 s on AWS) nor after the whole batch's timeouts added up."""
    return math.ceil(min(max(running, own), seconds_left))


def cover_seconds(running: int, own: int, seconds_left: float) -> int:
    """A batch's message's visibility while a job of timeout `running` runs: its span plus the margin."""
    return cover_span(running, own, seconds_left) + MARGIN_SECONDS


def ends_too_soon(ends_at: float, wanted_end: float) -> bool:
    """A visibility or a lease set earlier should be renewed: it ends more than half the margin before
    the end wanted now (the half spares a call when the two differ by a moment)."""
    return ends_at < wanted_end - MARGIN_SECONDS / 2


def planned_timeout(body: str) -> int:
    """A message's timeout read leniently: an unreadable message goes to the DLQ at its turn, in no time."""
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


@dataclass
class _Hidden:
    receipt_handle: str
    timeout: int
    visible_at: float = 0.0  # time.monotonic() when it reappears, as last set
    handed_back: bool = False


class HiddenBatch:
    """A received batch's messages, kept hidden only as long as this invocation may still need them.

    As the batch begins, each message is hidden for `cover_seconds` of the first job; at each job's
    turn, if some message would reappear sooner than that job's cover (more than half the margin
    sooner), every message still held is hidden again, from now, in one SQS call per 10. A batch of
    quick jobs makes one call; a batch of long ones one per turn. If this worker dies, the job it
    was running, and every message after it, comes back about one job's timeout plus the margin
    later. A handed-back message is left to the visibility its hand-back set. Best effort: a failed
    call leaves the batch with the queue's visibility timeout, and it is not tried again.
    """

    def __init__(self, messages: Sequence[tuple[str, str, str]]) -> None:
        """`messages`: (message id, receipt handle, body) each, in the order their jobs run."""
        self._order = [message_id for message_id, _, _ in messages]
        self._held = {
            message_id: _Hidden(receipt_handle, planned_timeout(body)) for message_id, receipt_handle, body in messages
        }
        self._working = True

    def begin(self, seconds_left: float) -> None:
        if self._order:
            self._cover(0, seconds_left, always=True)

    def turn(self, message_id: str, seconds_left: float) -> None:
        """The job of `message_id` is about to start."""
        if message_id in self._held:
            self._cover(self._order.index(message_id), seconds_left, always=False)

    def handed_back(self, message_id: str) -> None:
        if message_id in self._held:
            self._held[message_id].handed_back = True

    def _cover(self, running_index: int, seconds_left: float, *, always: bool) -> None:
        if not self._working:
            return
        running = self._held[self._order[running_index]].timeout
        now = time.monotonic()
        spans: list[tuple[_Hidden, int]] = []
        for index, message_id in enumerate(self._order):
            held = self._held[message_id]
            if not held.handed_back:  # a message answered already stays hidden until the batch's end deletes it
                spans.append(
                    (held, cover_seconds(running, held.timeout if index >= running_index else 0, seconds_left))
                )
        if not always and not any(ends_too_soon(held.visible_at, now + span) for held, span in spans):
            return
        if not queue.set_visibility([(held.receipt_handle, span) for held, span in spans]):
            self._working = False
            return
        for held, span in spans:
            held.visible_at = now + span
