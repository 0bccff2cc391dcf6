"""Run one job's code and turn what it did into a verdict: a job's failure is data, whatever it raised.

Where the code runs: here, for a type whose code this process loaded (the built-ins, the local
profile's test tooling, a unit test's own types); in the jobs function for a customer's type, which
the worker knows by its declaration only (shared/worker/run/fence.py, docs/decisions/customer-code-fence.md).
Either way the attempt's time limit is its timeout, enforced here (shared/execution/time_limit.py), the
type's `validate` hook runs before its code, and the same exceptions make the same verdicts
(shared/execution/fenced_job.py). The executor writes nothing: the completer (shared/worker/complete/completer.py)
applies its verdict.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from shared.aws import queue
from shared.execution import fenced_job, job_logging, time_limit
from shared.execution.fenced_job import Answer
from shared.jobs import job_types
from shared.model.message import JobMessage
from shared.model.outcome import Started, result_problem
from shared.worker.run import fence, recorded_run
from shared.worker.run.recorded_run import Suspension
from shared.worker.verdicts import Attempt, Completed, Dead, Retry, Suspend, Verdict


@dataclass(frozen=True)
class Ran:
    """What a job's code did: returned `result`, or failed with `failure` (its reason)."""

    started_at: float
    result: Any = None
    failure: str | None = None
    retry_after: float | None = None  # the job's own Retry-After (JobFailed)
    dead: bool = False  # no retry: the job said so (JobDead), or its payload or result is refused
    suspension: Suspension | None = None  # a durable job's: it stopped at a sleep or a wait

    @classmethod
    def of(cls, started_at: float, answer: Answer | Suspension) -> Ran:
        if isinstance(answer, Suspension):
            return cls(started_at, suspension=answer)
        return cls(started_at, answer.result, answer.failure, answer.retry_after, answer.dead)


def run(
    message: JobMessage,
    job_type: job_types.JobType | None,
    attempt: int,
    timeout: int,
    claim: recorded_run.Claim | None = None,
) -> Ran:
    """Run attempt `attempt` of the job within `timeout` seconds. `claim`: the claim it runs under, with which
    a customer's job records durable steps (None: an unclaimed run, which records none)."""
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
        answer = time_limit.run_within(timeout, lambda: _answer(job_type, message, context, claim))
    except Exception as error:  # a job's failure is data, whatever it raised
        answer = fenced_job.failure_of(error)
    return Ran.of(started_at, answer)


def _answer(
    job_type: job_types.JobType,
    message: JobMessage,
    context: job_types.JobContext,
    claim: recorded_run.Claim | None,
) -> Answer | Suspension:
    """What the job's code did: run in the jobs function for a customer's type (its durable steps recorded
    where it runs claimed), else here."""
    if job_type.in_jobs_function:
        if claim is not None:
            return recorded_run.run(job_type.name, message, context, claim)
        return fence.run(job_type.name, message.payload, context)
    return Answer(result=fenced_job.checked_run(job_type, message.payload, context))


def run_claimed(
    message: JobMessage,
    attempt: int,
    token: str,
    timeout: int,
    lease_end: float,
    *,
    run_number: int = 0,
    journal: bool = False,
) -> Verdict:
    """Run a claimed attempt: `Completed`, `Suspend` (a durable job's sleep or wait), `Retry` while attempts
    are left, else `Dead`. `run_number`: the job's run (its record's retries); `journal`: its record keeps one."""
    job_type = job_types.lookup(message.type)
    ran = run(message, job_type, attempt, timeout, recorded_run.Claim(token, run_number, journal))
    claimed = Attempt(message, token, Started(ran.started_at, first_attempt=attempt == 1), lease_end)
    if ran.suspension is not None:
        return Suspend(claimed, ran.suspension)
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
