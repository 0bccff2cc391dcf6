"""A waiting durable job's timer: the wake message that claims it when its sleep ends or its wait times out
(docs/decisions/durable-jobs.md "Sleeps and timeouts"). Due within `FunctionEnv.wake_scheduler_threshold_seconds`
(SQS's longest delay on AWS; lowered on the local profile), it is one SendMessage with a delay; later, a one-time
Scheduler schedule whose input is the job's message, as a far-future job's is (docs/decisions/far-future.md).

A timer is a hint: the claim decides (`waiting` with its `resume_at` passed), so one that fires after the job
was woken otherwise finds nothing to do and is acknowledged, and one sent twice runs the job once.
"""

from __future__ import annotations

import contextlib
import math
import time
from datetime import UTC, datetime

from shared import environment, settings
from shared.aws import eventbridge, queue
from shared.model.message import JobMessage


def schedule_name(job_id: str, step_n: int, attempt: int) -> str:
    """One schedule per suspension of a step: `w-<job id>-<step's place>-<its attempts>` (Scheduler names take
    64 characters; a job id takes 40 at most)."""
    return f"w-{job_id}-{step_n}-{attempt}"[:64]


def send(message: JobMessage, resume_at: float, name: str) -> None:
    """Send the job's wake message to arrive at `resume_at` (never early: the claim would find it asleep)."""
    delay = max(0, math.ceil(resume_at - time.time()))
    if delay <= environment.current().wake_scheduler_threshold_seconds:
        queue.send(message, min(delay, settings.MAX_SQS_DELAY_SECONDS))
        return
    due = datetime.fromtimestamp(math.ceil(resume_at), UTC)  # at() has whole seconds: never early
    # AlreadyExists: this suspension's timer is there already (a redelivery suspended it again).
    with contextlib.suppress(eventbridge.AlreadyExists):
        eventbridge.create(
            name,
            eventbridge.at_expression(due),
            message.to_json(),
            delete_after_completion=True,
            message_group=queue.message_group(message.tenant),
            priority=message.level,
        )
