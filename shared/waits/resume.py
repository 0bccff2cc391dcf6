"""Resume a waiting durable job: its step resolved in the journal first, then its record flipped `queued`,
then its wake message sent (docs/decisions/durable-jobs.md "Waiting").

In that order, whoever meets whom: an attempt still suspending the job records it `waiting` and then reads
the step again (shared/worker/run/recorded_run.py), so a resolution whose flip came too early is seen there;
a flip that finds the job cancelled resumes nothing (every resume goes through the record). A wake message
sent twice is harmless: the claim runs the job once.
"""

from __future__ import annotations

from shared.aws import queue
from shared.durable import steps
from shared.store.durable import journal_items
from shared.store.jobs import waiting_jobs


def resolve(job_id: str, tenant: str, step: str, change: steps.Resolved | steps.TimedOut, now: float) -> bool:
    """Resolve `step` of the job with `change` and wake the job: whether it was woken (False: the step was not
    waiting for it, or the job waits no more: cancelled). The same resolution told again wakes the job again
    (its first wake may have been lost)."""
    outcome = journal_items.resolve(job_id, tenant, step, change, now=now)
    if not isinstance(outcome, steps.Applied | steps.AlreadyDone):
        return False
    return wake(job_id, step)


def wake(job_id: str, step: str) -> bool:
    """The job's step is resolved: flip it `queued` and send its wake message. False if it waits no longer in
    that step (cancelled, woken and run already)."""
    message = waiting_jobs.wake(job_id, step)
    if message is None:
        return False
    queue.send(message, 0)
    return True


def wake_if_resolved(job_id: str, step: str | None = None) -> bool:
    """A job just suspended (or its suspending message delivered again): wake it if its waiting step (`step`,
    else its last) was resolved while it suspended, a resolution whose own flip found it still running."""
    journal = journal_items.read(job_id, results=False)
    if journal is None:
        return False
    record = journal.steps.get(step) if step is not None else max(journal.steps.values(), key=lambda each: each.n)
    if record is None or record.status is steps.StepStatus.WAITING:
        return False
    return wake(job_id, record.id)
