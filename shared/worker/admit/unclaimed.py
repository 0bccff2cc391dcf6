"""Running while the store fails: a job's first delivery runs without the claim (unless its type is
exclusive), and its outcome travels on the jobs queue in an outcome message that a later delivery
records, once, with a conditional write (docs/decisions/store-blips.md)."""

from __future__ import annotations

import math
import time

from shared.aws import queue
from shared.jobs import job_types
from shared.model.message import JobMessage
from shared.model.outcome import OutcomeMessage, result_problem
from shared.model.states import Status
from shared.worker.delivery import Delivery
from shared.worker.run import executor
from shared.worker.verdicts import RanUnclaimed, Verdict


def without_claim(message: JobMessage, delivery: Delivery, timeout: int, why: str, *, first_run: bool) -> Verdict:
    """The store cannot claim: run a first delivery without the claim, or hand it back (nothing happened yet).

    Only a first delivery runs: a message received again may be one whose unclaimed run died
    (its job ran, perhaps), as may a waiting job's message sent again (shared/worker/admit/waiting.py); and
    an exclusive type never runs without the claim.
    """
    job_type = job_types.lookup(message.type)
    if job_type is None or not may_run_unclaimed(message, delivery, first_run=first_run):
        return delivery.hand_back(f"{why}: not claiming now")
    return run_unclaimed(message, job_type, timeout)


def may_run_unclaimed(message: JobMessage, delivery: Delivery, *, first_run: bool) -> bool:
    job_type = job_types.lookup(message.type)
    return first_run and delivery.first_receive and job_type is not None and not job_type.is_exclusive(message.payload)


def run_unclaimed(message: JobMessage, job_type: job_types.JobType, timeout: int) -> RanUnclaimed:
    """Run attempt 1 without a claim. Its outcome goes to the store by an outcome message, and the
    original is then acknowledged. If the outcome cannot be sent, the original comes back and runs
    again under a claim (the job ran twice, and only that claimed run is recorded)."""
    ran = executor.run(message, job_type, 1, timeout)
    delay = 0
    if ran.failure is not None:
        if message.max_attempts <= 1 or ran.dead:
            outcome = OutcomeMessage(message, Status.DEAD, ran.started_at, time.time(), error=ran.failure)
        else:
            outcome = OutcomeMessage(message, Status.FAILED, ran.started_at, time.time(), error=ran.failure)
            delay = min(math.ceil(executor.retry_delay(job_type, 1, ran.retry_after)), queue.MAX_DELAY_SECONDS)
    elif (problem := result_problem(ran.result)) is not None:
        outcome = OutcomeMessage(message, Status.DEAD, ran.started_at, time.time(), error=problem)
    else:
        outcome = OutcomeMessage(message, Status.SUCCEEDED, ran.started_at, time.time(), result=ran.result)
    return RanUnclaimed(outcome, delay)
