"""Work: claim a delivered job, run it, record its outcome exactly once.

Delivery is at least once. The claim is a conditional write, so of several
deliveries of one job only one runs at a time, and only the attempt that holds
the claim can record an outcome.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from botocore.exceptions import BotoCoreError, ClientError

from shared import deadline, job_logging, job_types, queue, store
from shared.model import JobMessage

# A store (or queue) call that failed after botocore's own retries (throttling, 5xx, timeouts): a blip.
_AWS_ERRORS = (ClientError, BotoCoreError)

# After a store failure this worker process hands deliveries straight back for a short while instead
# of spending botocore's retries on each: a batch of 10 that retried every record would outlast the
# invocation's timeout, and a timed-out batch waits the whole visibility timeout (30 s local, 180 s AWS).
STORE_COOLDOWN_SECONDS = 2.0
_store_down_until = 0.0


def _store_failed() -> None:
    global _store_down_until
    _store_down_until = time.monotonic() + STORE_COOLDOWN_SECONDS


class RetryLater(Exception):
    """Leave the message on the queue; it comes back after `seconds`."""

    def __init__(self, seconds: float, reason: str) -> None:
        super().__init__(f"retry in {seconds:.0f}s: {reason}")
        self.seconds = seconds


@dataclass(frozen=True)
class Delivery:
    message_id: str
    body: str


def work(message: JobMessage, delivery: Delivery) -> str:
    """Handle one delivery; returns what happened. Raises RetryLater to redeliver."""
    if time.monotonic() < _store_down_until:
        raise RetryLater(queue.backoff_seconds(1), "the store failed moments ago: not claiming now")
    claimed_at = time.time()
    timeout = deadline.timeout_of(message)
    lease = deadline.lease_seconds(timeout)
    try:
        claim = store.claim(message, delivery.message_id, claimed_at, lease)
    except _AWS_ERRORS as error:
        # Nothing happened yet: come back soon rather than after the whole visibility timeout.
        _store_failed()
        raise RetryLater(queue.backoff_seconds(1), f"store unavailable for the claim: {error}") from error
    match claim:
        case store.Finished():
            return "duplicate"
        case store.HeldElsewhere(by_this_message=True, lease_left_seconds=left):
            # Our own earlier attempt may still be running (or died recording its outcome):
            # come back when its lease has run out.
            raise RetryLater(left + 1, "an earlier delivery of this message still holds the job")
        case store.HeldElsewhere():
            # Another message for the same job holds it; that message stays on the queue
            # until the holder records an outcome, so it will come back if the holder dies.
            return "duplicate"
        case store.Exhausted(attempts=attempts):
            reason = f"gave up after {attempts} attempts that ended without an outcome (worker crash or timeout)"
            queue.bury(delivery.body, reason)  # DLQ first: a failure here leaves the job to retry
            store.bury(message, reason, time.time())
            return "dead"
        case store.Claimed(attempt=attempt, token=token):
            try:
                return _run(message, delivery, attempt, token, timeout)
            except _AWS_ERRORS as error:
                # The job ran but its outcome is not recorded, and this message holds the lease: come back
                # when the lease has run out, and the claim starts a new attempt (the job runs again).
                _store_failed()
                lease_left = claimed_at + lease - time.time()
                raise RetryLater(max(lease_left, 0) + 1, f"store unavailable recording the outcome: {error}") from error
    raise AssertionError(f"unexpected claim result {claim!r}")


def _run(message: JobMessage, delivery: Delivery, attempt: int, token: str, timeout: int) -> str:
    job_type = job_types.lookup(message.type)
    context = job_types.JobContext(
        job_id=message.id,
        attempt=attempt,
        max_attempts=message.max_attempts,
        deadline=time.time() + timeout,
        logger=job_logging.logger_for(message, attempt),
    )
    retry_after: float | None = None
    try:
        if job_type is None:
            raise job_types.JobFailed(f"unknown job type {message.type!r} on this worker")
        with deadline.time_limit(timeout):
            result = job_type.run(message.payload, context)
    except Exception as error:  # a job's failure is data, whatever it raised
        reason = str(error) if isinstance(error, job_types.JobTimedOut) else f"{type(error).__name__}: {error}"
        if isinstance(error, job_types.JobFailed):
            retry_after = error.retry_after
        if attempt >= message.max_attempts or isinstance(error, job_types.JobDead):
            queue.bury(delivery.body, reason)  # DLQ first: a failure here leaves the job to retry
            store.fail(message.id, token, reason, time.time(), dead=True)
            return "dead"
        if store.fail(message.id, token, reason, time.time(), dead=False):
            raise RetryLater(_retry_delay(job_type, attempt, retry_after), reason) from error
        return "lost-claim"
    store.complete(message.id, token, result, time.time())
    return "succeeded"


def _retry_delay(job_type: job_types.JobType | None, attempt: int, retry_after: float | None) -> float:
    """The job's own Retry-After (capped by its type), else its type's backoff."""
    if job_type is None:
        return queue.backoff_seconds(attempt)
    if retry_after is not None:
        return max(0.0, min(retry_after, job_type.backoff_cap_seconds))
    return queue.backoff_seconds(attempt, base=job_type.backoff_base_seconds, cap=job_type.backoff_cap_seconds)
