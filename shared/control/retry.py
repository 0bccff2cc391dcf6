"""Run a dead or cancelled job again (one or in bulk), and the operator's DLQ redrive of one
(docs/decisions/cancel-and-retry.md).

A retry resets the job's record with a conditional write (shared/store/jobs/job_control.py), then sends its
message: a batch's member is pending again in its batch first (shared/batches/members.py). A tenant's
retries count against its rate limit (shared/tenants/rate_limit.py) before anything is written: one per
retry, one per job a bulk retry is about to re-send. A bulk retry's index read is metered first, as a
filtered listing is (`rate_limit.check_heavy_read`). The operator's DLQ redrive (`redrive`) is not
counted: it is the operator's, run with AWS credentials.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from botocore.exceptions import BotoCoreError, ClientError

from shared.aws import queue
from shared.batches import members
from shared.control import owned
from shared.errors import Conflict
from shared.jobs import listing
from shared.model.message import JobMessage
from shared.model.states import Status
from shared.store import keys
from shared.store.jobs import job_control, job_items
from shared.tenants import rate_limit

# Bulk retry resets records side by side: 100 conditional writes cost ~10 round trips, not 100.
_writers = ThreadPoolExecutor(max_workers=10, thread_name_prefix="retry")


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
            members.member_reopened(tenant, outcome.batch.id, outcome.batch.index, outcome.batch.generation)
        _send(outcome)  # the record is queued first, so no worker can see the message before it is retryable
        _sent(job_id, now)
        return outcome
    if not outcome.item:
        owned.unrecorded(tenant, job_id, now)  # JobNotFound unless this tenant's
        raise Conflict(f"job {job_id} is queued and has not run yet; there is nothing to retry")
    record = owned.record(outcome.item, tenant, job_id)
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
            members.member_reopened(tenant, message.batch.id, message.batch.index, message.batch.generation)
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
