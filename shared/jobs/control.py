"""Cancel and retry: cancel one that has not started; run a dead or cancelled one again (one or in bulk).

Every decision is a conditional write on the job's record (shared/store/job_store.py), the same item the
worker's claim writes, so a cancel racing a claim has exactly one winner: the job runs (and the
cancel answers 409 `running`), or it is cancelled (and the delivery is acknowledged unrun).

A tenant's cancels and retries count against its rate limit (shared/tenants/rate_limit.py) before
anything is written: one per cancel or retry, one per job a bulk retry is about to re-send. A bulk
retry's index read is metered first, as a filtered listing is (`rate_limit.check_heavy_read`). The
operator's DLQ redrive (`redrive`) is not counted: it is the operator's, run with AWS credentials.
"""

from __future__ import annotations

import contextlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import environment, ids, settings
from shared.aws import eventbridge, queue
from shared.aws.clients import client, is_not_found
from shared.durable import steps
from shared.errors import Conflict
from shared.jobs import batches, listing
from shared.jobs.enqueue import delayed_schedule_name
from shared.jobs.far_future import release as give_back_far_future_unit
from shared.jobs.status import JobNotFound
from shared.model import BatchMember, JobMessage, JobRecord, Status
from shared.store import job_control, job_items, job_store, journal_items, keys
from shared.store.id_secret import id_secret
from shared.tenants import rate_limit

_DAY = 86_400
# Bulk retry resets records side by side: 100 conditional writes cost ~10 round trips, not 100.
_writers = ThreadPoolExecutor(max_workers=10, thread_name_prefix="retry")


def _unrecorded(tenant: str, job_id: str, now: float) -> ids.IdInfo:
    """What the id of a job with no record says, if it is this tenant's; else JobNotFound."""
    info = ids.verify(id_secret(), tenant, job_id)
    if info is None:
        raise JobNotFound(job_id)
    if info.minted_at is not None and now - info.minted_at > settings.MESSAGE_RETENTION_DAYS * _DAY:
        raise JobNotFound(job_id)  # its message expired unrun long ago
    return info


def _owned(item: dict[str, Any], tenant: str, job_id: str) -> JobRecord:
    if not item or item.get("tenant", {}).get("S") != tenant:
        raise JobNotFound(job_id)
    return job_items.record_from_item(item)


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
        info = _unrecorded(tenant, job_id, now)
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
        record = _owned(outcome.item, tenant, job_id)
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


def _count_in_batch(record: JobRecord) -> None:
    """A cancelled member counts as cancelled in its batch (idempotent). A job cancelled before any worker
    saw it has no batch on its record yet: its message, arriving, counts it (shared/worker/receive.py)."""
    if record.batch is not None and record.batch_index is not None:
        batches.member_ended(BatchMember(record.batch, record.batch_index, record.retries), Status.CANCELLED)


def _send(message: JobMessage) -> None:
    queue.send(message)


def _sent(job_id: str, retried_at: float) -> None:
    """Record that the retry's message went out. If the store fails here, a later retry of the job sends
    it once more (a duplicate the claim absorbs), so the answer need not fail."""
    with contextlib.suppress(ClientError, BotoCoreError):
        job_control.mark_retry_sent(job_id, retried_at)


def retry(tenant: str, job_id: str) -> JobMessage:
    """Run a dead or cancelled job again with a fresh attempt budget (same id). RateLimited over the
    tenant's rate (a retry counts one, nothing written).

    Idempotent: retrying a job a retry already queued answers it again and sends nothing, unless its
    message was never sent (that send failed): then it is sent now.
    """
    rate_limit.check(tenant)
    return _retry(tenant, job_id, resend_queued=False)


def redrive(tenant: str, job_id: str) -> JobMessage:
    """`retry` for the operator's DLQ redrive: not counted against the tenant's rate, and a job a retry
    already queued is sent again (the dead-lettered message was its message)."""
    return _retry(tenant, job_id, resend_queued=True)


def _retry(tenant: str, job_id: str, *, resend_queued: bool) -> JobMessage:
    now = time.time()
    outcome = job_control.reset_for_retry(job_id, tenant, now)
    if isinstance(outcome, JobMessage):
        if outcome.batch is not None:  # pending again in its batch, in its next run, before it can run
            batches.member_reopened(tenant, outcome.batch.id, outcome.batch.index, outcome.batch.generation)
        _send(outcome)  # the record is queued first, so no worker can see the message before it is retryable
        _sent(job_id, now)
        return outcome
    if not outcome.item:
        _unrecorded(tenant, job_id, now)  # JobNotFound unless this tenant's
        raise Conflict(f"job {job_id} is queued and has not run yet; there is nothing to retry")
    record = _owned(outcome.item, tenant, job_id)
    if record.status is Status.QUEUED and record.retries:
        message = job_items.message_from_item(outcome.item, enqueued_at=now)
        unsent = job_control.retry_unsent(outcome.item)
        if resend_queued or unsent is not None:
            _send(message)  # a duplicate of a message that did go out is harmless: the claim runs one
            if unsent is not None:
                _sent(job_id, unsent)
        return message
    if record.status in job_control.RETRYABLE and not record.payload_recorded:
        raise Conflict(
            f"job {job_id} was cancelled before any worker received it, so its payload is not recorded yet; "
            "it is recorded when its message arrives (after any delay it had): retry then"
        )
    raise Conflict(f"job {job_id} is {record.status}; only dead or cancelled jobs can be retried")


@dataclass(frozen=True)
class BulkRetry:
    ids: list[str]
    more: bool  # dead jobs matching the filter may remain: call again
    skipped: list[dict[str, str]] = field(default_factory=list)  # [{"id", "reason"}]


def retry_dead(tenant: str, job_type: str | None, since: float | None, limit: int) -> BulkRetry:
    """Retry up to `limit` of the tenant's dead jobs (newest first), optionally of one type or enqueued since.

    Its read of the index (up to settings.LIST_READ_BUDGET entries, found or not) is metered first, with
    filtered listings (ReadsLimited). The dead jobs found then count against the tenant's rate limit,
    all or none, before any is reset: RateLimited retries none (a call that finds none counts nothing
    there). A reset refused brings nothing back; the few refused are read for their status alone."""
    rate_limit.check_heavy_read(tenant)
    now = time.time()
    filters = {"status": str(Status.DEAD)} | ({"job_type": job_type} if job_type else {})
    found = listing.read_index(tenant, filters, since=since, until=now, before=None, want=limit, attributes=("pk",))
    candidates = [keys.job_id_of(item["pk"]["S"]) for item in found.items]
    if candidates:
        rate_limit.check(tenant, len(candidates))
    outcomes = list(
        _writers.map(
            lambda job_id: job_control.reset_for_retry(job_id, tenant, now, (Status.DEAD,), explain=False), candidates
        )
    )
    messages = [outcome for outcome in outcomes if isinstance(outcome, JobMessage)]
    for message in messages:
        if message.batch is not None:
            batches.member_reopened(tenant, message.batch.id, message.batch.index, message.batch.generation)
    refused = [
        job_id
        for job_id, outcome in zip(candidates, outcomes, strict=True)
        if isinstance(outcome, job_control.Unchanged)
    ]
    now_status = job_control.statuses(refused)
    skipped = [{"id": job_id, "reason": _why_skipped(now_status[job_id])} for job_id in refused]
    not_sent = queue.send_batch([(message, 0) for message in messages])
    retried = [message.id for message, reason in zip(messages, not_sent, strict=True) if reason is None]
    list(_writers.map(lambda job_id: _sent(job_id, now), retried))
    skipped += [
        {"id": message.id, "reason": f"queue unavailable ({reason}); it shows queued: retry it again to resend"}
        for message, reason in zip(messages, not_sent, strict=True)
        if reason is not None
    ]
    return BulkRetry(ids=retried, more=found.next_before is not None, skipped=skipped)


def _why_skipped(status: str | None) -> str:
    if status == Status.DEAD:
        return "its payload was not recorded (a record older than payload recording)"
    return f"it is {status} now (changed since it was found)"
