"""Cancel a job that has not started (docs/decisions/cancel-and-retry.md).

The decision is a conditional write on the job's record (shared/store/jobs/job_control.py), the same item the
worker's claim writes, so a cancel racing a claim has exactly one winner: the job runs (and the cancel
answers 409 `running`), or it is cancelled (and the delivery is acknowledged unrun). A cancel counts one
against the tenant's rate limit (shared/tenants/rate_limit.py) before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import time

from botocore.exceptions import BotoCoreError, ClientError

from shared import environment, ids
from shared.aws import eventbridge
from shared.aws.clients import client, is_not_found
from shared.batches import members
from shared.control import owned
from shared.durable import steps
from shared.errors import Conflict
from shared.jobs.enqueue import delayed_schedule_name
from shared.jobs.far_future import release as give_back_far_future_unit
from shared.jobs.status import JobNotFound
from shared.model.message import BatchMember, JobMessage
from shared.model.record import JobRecord
from shared.model.states import Status
from shared.store.durable import event_items, journal_items, token_items
from shared.store.jobs import job_control, job_store
from shared.tenants import rate_limit
from shared.waits import children
from shared.waits import quota as waiting_quota


def _far_future_message(job_id: str) -> JobMessage | None:
    """The message of a job waiting as a one-time schedule (due beyond SQS's 15-minute delay), if it is one."""
    try:
        schedule = client("scheduler").get_schedule(
            Name=delayed_schedule_name(job_id), GroupName=environment.current().schedule_group
        )
    except ClientError as error:
        if is_not_found(error):
            return None
        raise
    return JobMessage.from_dict(json.loads(schedule["Target"]["Input"]))


def cancel(tenant: str, job_id: str) -> JobRecord:
    """Cancel a job that has not started. Idempotent: cancelling a cancelled job answers it again.

    Conflict if it is running or finished; JobNotFound if it is not this tenant's; RateLimited over the
    tenant's rate (a cancel counts one).
    """
    rate_limit.check(tenant)
    now = time.time()
    existing = job_store.get(job_id)
    far_future: JobMessage | None = None
    if existing is None:
        info = owned.unrecorded(tenant, job_id, now)
        enqueued_at = info.minted_at or now  # keyed and scheduled ids carry no time: listed at the cancel
        if info.kind is not ids.IdKind.SCHEDULED:  # a schedule's run is never a far-future job
            far_future = _far_future_message(job_id)
        if far_future is not None and far_future.tenant != tenant:
            raise JobNotFound(job_id)
    else:
        if existing.tenant != tenant:
            raise JobNotFound(job_id)
        enqueued_at = existing.enqueued_at or now
    outcome = job_control.cancel(job_id, tenant, enqueued_at, now, known=far_future)
    if isinstance(outcome, job_control.Unchanged):
        record = owned.record(outcome.item, tenant, job_id)
        if record.status is Status.CANCELLED:
            _count_in_batch(record)  # again: the cancel that wrote it may have died before counting it
            return record
        if record.status is Status.RUNNING:
            raise Conflict(
                f"job {job_id} is running (attempt {record.attempts} of {record.max_attempts}); a running job "
                "cannot be cancelled: it ends on its own, and a failure of it is retried unless it is cancelled then"
            )
        raise Conflict(f"job {job_id} already finished ({record.status}); only a job that has not run can be cancelled")
    if far_future is not None:
        # The record already stops it; deleting the schedule just spares the firing. Its quota unit
        # comes back here, or on the worker if the schedule fires first: exactly once either way.
        eventbridge.delete(delayed_schedule_name(job_id))
        give_back_far_future_unit(tenant, job_id)
    if existing is not None and existing.journal:
        _cancel_waiting_step(job_id, tenant, now)
        waiting_quota.release(tenant, job_id)  # the unit a long wait held (none: a no-op)
    _count_in_batch(outcome)
    return outcome


def _cancel_waiting_step(job_id: str, tenant: str, now: float) -> None:
    """A durable job cancelled while it waited: its waiting step says so in its steps. Best effort: the record
    stops the job already (every resume goes through it), and a later event or token finds it cancelled."""
    journal = journal_items.read(job_id, results=False)
    waiting = journal.waiting() if journal is not None else None
    if waiting is not None:
        with contextlib.suppress(ClientError, BotoCoreError):
            journal_items.resolve(job_id, tenant, waiting.id, steps.Cancelled(), now=now)
            _take_out(job_id, tenant, waiting)


def _take_out(job_id: str, tenant: str, waiting: steps.StepRecord) -> None:
    """What finds the cancelled job's wait made inert: its entry out of the event index (an event no longer
    reads it), its token cancelled (a completion answers 409 "cancelled")."""
    wait = waiting.wait or {}
    if waiting.kind is steps.StepKind.WAIT_FOR_EVENT and isinstance(wait.get("name"), str):
        waiter = event_items.Waiter(job_id, waiting.id, dict(wait.get("match") or {}), 0.0)
        event_items.unregister(tenant, wait["name"], waiter)
    elif waiting.kind is steps.StepKind.WAIT_FOR_TOKEN and isinstance(wait.get("token"), str):
        token_items.cancel(wait["token"])


def _count_in_batch(record: JobRecord) -> None:
    """A cancelled member counts as cancelled in its batch (idempotent), and a durable job's cancelled child
    resolves its parent's step (ChildJobFailed in the parent's code). A job cancelled before any worker saw it
    has neither on its record yet: its message, arriving, does both (shared/worker/receive.py)."""
    if record.batch is not None and record.batch_index is not None:
        members.member_ended(BatchMember(record.batch, record.batch_index, record.retries), Status.CANCELLED)
    children.child_ended(record.tenant, record.id, record.parent, Status.CANCELLED)
