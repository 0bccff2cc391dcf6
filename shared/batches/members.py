"""A batch's members as the worker sees them end (docs/decisions/batches.md): the API's half (create, get,
list, cancel) is shared/batches/batches.py.

- A member's end is counted by `member_ended`, called by the worker after the job's record is written
  (and by a redelivery, if it died in between): one conditional write moves the member from `pending`
  to its state (shared/store/batches/batch_items.py `mark`), a second decides the batch's status and which
  callbacks are due, exactly once (`settle`), and the callbacks are enqueued and marked sent
  (`send_due_callbacks`). Each step may be repeated: a delivery that finds its job finished repeats them all.
- A retried dead member (POST /v1/jobs/{id}/retry) is pending again, in its next run
  (`member_reopened`), and the batch is running again; a callback that already ran does not run again.
"""

from __future__ import annotations

import time

from shared.aws import queue
from shared.batches import callbacks
from shared.model.message import BatchMember
from shared.model.states import Status
from shared.store.batches import batch_items, batch_members
from shared.store.batches.batch_items import BatchRecord
from shared.store.batches.batch_members import MemberState

_MEMBER_STATE = {
    Status.SUCCEEDED: batch_members.DONE,
    Status.DEAD: batch_members.DEAD,
    Status.CANCELLED: batch_members.CANCELLED_JOB,
    Status.SKIPPED: batch_members.SKIPPED_JOB,  # ended without a run: a debounce's later job, or a unique key's holder
}


def member_ended(member: BatchMember, status: Status, *, single_attempt: bool = False) -> None:
    """Count the end of a batch's member (its record says `status`), settle the batch, and enqueue the
    callbacks that makes due. Idempotent, and safe to repeat after a crash anywhere in it.
    `single_attempt`: each store call makes one attempt (the worker's)."""
    if status not in _MEMBER_STATE:
        return
    state = MemberState(_MEMBER_STATE[status], member.generation)
    batch = batch_members.mark(member.id, member.index, state, single_attempt=single_attempt)
    if batch is not None:
        send_due_callbacks(batch, single_attempt=single_attempt)


def member_reopened(tenant: str, batch_id: str, index: int, generation: int) -> None:
    """A member retried after it ended dead (or cancelled): pending again in its run `generation`, and
    its batch running again. A callback already enqueued is not enqueued again."""
    batch = batch_members.mark(batch_id, index, MemberState(batch_members.PENDING, generation))
    if batch is not None and batch.tenant == tenant:
        batch_items.settle(batch, time.time())


def send_due_callbacks(batch: BatchRecord, *, single_attempt: bool = False) -> None:
    """Settle the batch (its status; which callbacks are due, decided once), then enqueue each callback
    due and not yet sent, and mark it sent. A crash between a send and its mark sends it again from the
    next delivery that gets here: the same job id, run once."""
    settled = batch_items.settle(batch, time.time(), single_attempt=single_attempt)
    unsent = settled.unsent()
    if not unsent:
        return
    specs = batch_items.callback_specs(settled.id, single_attempt=single_attempt)
    for kind in unsent:
        spec = specs.get(kind)
        if spec is not None:
            parent = {"kind": "batch", "id": settled.id, "callback": kind}
            shown, now = callbacks.batch_view(settled), time.time()
            queue.send(callbacks.message(settled.tenant, spec, parent=parent, adds="batch", view=shown, now=now))
        batch_items.mark_sent(settled.id, kind, time.time(), single_attempt=single_attempt)
