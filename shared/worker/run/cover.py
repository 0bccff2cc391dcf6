"""The batch's cover: what hides each of a batch's messages for its own job's timeout (`HiddenBatch`),
and the times it is made of: a job's timeout, the lease its claim holds, and what must be left of the
invocation to start it.

A batch's jobs run at once, each on a thread of its own (shared/worker/producer.py `handle_all`), so
one job's timeout never delays its batch-mates. What stops a job at its timeout is
shared/execution/time_limit.py `run_within` (the thread waiting for the job ends the attempt, and the job's
thread is sent an exception); it lives with the job types because the jobs function, which runs a
customer's job outside the worker, stops it the same way.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Sequence
from concurrent.futures import Executor, Future

from shared import environment, settings
from shared.aws import queue
from shared.jobs import job_types
from shared.model.message import JobMessage

# Time a claim and a message's visibility outlast the job's timeout: to record the outcome, and
# for clock and scheduling slack. Short on purpose: it is how much later than its timeout a
# crashed job comes back.
MARGIN_SECONDS = 10


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


def cover_span(timeout: int, seconds_left: float) -> int:
    """How long a batch's message, and a claim made ahead for it, must last: its job's timeout (its jobs
    start together, as the batch begins), never past what is left of the invocation. A message whose
    worker dies comes back about its job's timeout later, not after the queue's visibility timeout
    (which must be at least the worker's 900 s on AWS)."""
    return math.ceil(min(timeout, seconds_left))


def cover_seconds(timeout: int, seconds_left: float) -> int:
    """A batch's message's visibility while its job runs: its span plus the margin."""
    return cover_span(timeout, seconds_left) + MARGIN_SECONDS


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


class HiddenBatch:
    """A received batch's messages, kept hidden only as long as this invocation may still need them.

    As the batch begins, each message is hidden for `cover_seconds` of its own job (its jobs start
    together), in one SQS call per 10; a message already known to wait (over its tenant's running cap)
    gets its wait in the same call. If this worker dies, each job comes back about its own timeout
    plus the margin later. A hand-back later sets its message's visibility again. Best effort: a failed
    call leaves the batch with the queue's visibility timeout.
    """

    def __init__(self, messages: Sequence[tuple[str, str, int | None]], queue_url: str | None = None) -> None:
        """`messages`: (receipt handle, body, the seconds it waits if it is known to wait) each, received from
        `queue_url` (None: the jobs queue; a batch comes from one event source, so one queue: a lane's)."""
        self._messages = messages
        self._queue_url = queue_url
        self._hiding: Future[None] | None = None

    def begin_on(self, threads: Executor, seconds_left: float) -> None:
        """`begin` on one of `threads`, not waited for here (`landed` waits)."""
        self._hiding = threads.submit(self.begin, seconds_left)

    def landed(self) -> None:
        """Wait for `begin_on`'s call (best effort, as the cover itself)."""
        if self._hiding is not None:
            with contextlib.suppress(Exception):
                self._hiding.result()

    def begin(self, seconds_left: float) -> None:
        if self._messages:
            queue.set_visibility(
                [
                    (handle, cover_seconds(planned_timeout(body), seconds_left) if wait is None else wait)
                    for handle, body, wait in self._messages
                ],
                queue_url=self._queue_url,
            )
