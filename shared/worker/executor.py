"""Run one job's code and turn what it did into a verdict: a job's failure is data, whatever it raised.

The attempt's time limit is its timeout (shared/worker/deadline.py). The executor writes nothing:
the completer (shared/worker/completer.py) applies its verdict. A customer's `validate` hook runs
here, before the job's code, not in the API (which never imports a customer's module).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from shared.aws import queue
from shared.jobs import job_logging, job_types, time_limit
from shared.model import JobMessage, result_problem
from shared.store import job_store
from shared.worker.verdicts import Attempt, Completed, Dead, Retry, Verdict


@dataclass(frozen=True)
class Ran:
    """What a job's code did: returned `result`, or failed with `failure` (its reason)."""

    started_at: float
    result: Any = None
    failure: str | None = None
    retry_after: float | None = None  # the job's own Retry-After (JobFailed)
    dead: bool = False  # the job said not to retry (JobDead)


def run(message: JobMessage, job_type: job_types.JobType | None, attempt: int, timeout: int) -> Ran:
    """Run attempt `attempt` of the job within `timeout` seconds."""
    started_at = time.time()
    context = job_types.JobContext(
        job_id=message.id,
        attempt=attempt,
        max_attempts=message.max_attempts,
        deadline=started_at + timeout,
        logger=job_logging.logger_for(message.type, message.id, attempt, message.tenant),
        tenant=message.tenant,
    )
    try:
        if job_type is None:
            raise job_types.JobFailed(f"unknown job type {message.type!r} on this worker")
        result = time_limit.run_within(timeout, lambda: _checked_run(job_type, message.payload, context))
    except Exception as error:  # a job's failure is data, whatever it raised
        return Ran(
            started_at,
            failure=str(error) if isinstance(error, job_types.JobTimedOut) else f"{type(error).__name__}: {error}",
            retry_after=error.retry_after if isinstance(error, job_types.JobFailed) else None,
            dead=isinstance(error, job_types.JobDead),
        )
    return Ran(started_at, result=result)


def _checked_run(job_type: job_types.JobType, payload: Any, context: job_types.JobContext) -> Any:
    """The job's code, after its type's validator: a customer's validator is its code too, bounded alike."""
    _refuse_an_invalid_payload(job_type, payload)
    return job_type.run(payload, context)


def _refuse_an_invalid_payload(job_type: job_types.JobType, payload: Any) -> None:
    """A customer type's `validate`: a payload it refuses ends the job dead, as no retry changes the payload.

    A built-in's validator ran in the API at enqueue, and its code checks again as it runs.
    """
    if job_type.builtin or job_type.validate is None:
        return
    try:
        job_type.validate(payload)
    except job_types.InvalidPayload as refused:
        raise job_types.JobDead(f"invalid payload: {refused}") from refused


def run_claimed(message: JobMessage, attempt: int, token: str, timeout: int, lease_end: float) -> Verdict:
    """Run a claimed attempt: `Completed`, `Retry` while attempts are left, else `Dead`."""
    job_type = job_types.lookup(message.type)
    ran = run(message, job_type, attempt, timeout)
    claimed = Attempt(message, token, job_store.Started(ran.started_at, first_attempt=attempt == 1), lease_end)
    if ran.failure is not None:
        if attempt >= message.max_attempts or ran.dead:
            return Dead(ran.failure, message, claimed)
        return Retry(claimed, retry_delay(job_type, attempt, ran.retry_after), ran.failure)
    if (problem := result_problem(ran.result)) is not None:
        return Dead(problem, message, claimed)  # not retried: the same job would most likely return it again
    return Completed(claimed, ran.result, time.time())


def retry_delay(job_type: job_types.JobType | None, attempt: int, retry_after: float | None) -> float:
    """The job's own Retry-After (capped by its type), else its type's backoff."""
    if job_type is None:
        return queue.backoff_seconds(attempt)
    if retry_after is not None:
        return max(0.0, min(retry_after, job_type.backoff_cap_seconds))
    return queue.backoff_seconds(attempt, base=job_type.backoff_base_seconds, cap=job_type.backoff_cap_seconds)
