"""What a job's end sets off: its batch's count and callbacks (shared/batches/members.py), its own
callback (shared/batches/callbacks.py). Called by the worker once the job's outcome is recorded, and
again by any later delivery that finds the job finished: every step is idempotent, so a crash
between the job's record and these (the message comes back) loses nothing and counts nothing twice.
"""

from __future__ import annotations

from typing import Any

from shared.batches import callbacks, members
from shared.model.lineage import STEP_PARENT
from shared.model.message import BatchMember, JobMessage
from shared.model.states import Status


def has_follow_ups(job: JobMessage) -> bool:
    """Whether the job's end sets anything off (most jobs: no, and they cost nothing here): its batch, its
    callbacks, or, a durable job's child, its parent's step (shared/waits/children.py, which the worker calls
    after `job_ended`)."""
    return job.batch is not None or bool(job.callbacks) or (job.parent or {}).get("kind") == STEP_PARENT


def job_ended(job: JobMessage, status: Status, *, single_attempt: bool = False) -> None:
    """The job is recorded `status` (finished): count it in its batch, enqueue what its end calls for.
    Raises what the store or the queue raises: the caller hands the delivery back, and it is done then.
    `single_attempt`: each store call makes one attempt (the worker's: see docs/decisions/store-blips.md)."""
    if job.batch is not None:
        members.member_ended(job.batch, status, single_attempt=single_attempt)
    if job.callbacks:
        callbacks.enqueue_job_callback(job, status, single_attempt=single_attempt)


def unrunnable_ended(fields: dict[str, Any], *, single_attempt: bool = False) -> None:
    """A message that cannot run (shared/model/message.py UnreadableMessage) was recorded `dead`: if its valid
    fields name a batch, the member is counted dead there, so the batch still ends. Its callbacks are not
    enqueued: nothing of the message can be trusted to build them."""
    if isinstance(fields.get("batch"), dict):
        members.member_ended(BatchMember(**fields["batch"]), Status.DEAD, single_attempt=single_attempt)
