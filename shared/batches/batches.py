"""Batches: up to 1,000 jobs enqueued together and counted as one, with callbacks when they have all
ended (`on_complete`) or all succeeded (`on_success`). See docs/decisions/batches.md.

- `create` checks every job first (an invalid one refuses the whole request, naming `jobs[i].field`,
  and nothing is sent), writes the batch's item, then sends its jobs. Each job's id is derived from
  the batch and its index, so sending the same request again (its idempotency key) sends the same
  jobs, which run once; another request with that key is refused (409), as its jobs would take the
  first request's ids.
- A member's end, counted by the worker, and a retried member reopened: shared/batches/members.py.
- `cancel` cancels the members still pending that have not started, and the batch runs no callback. It
  costs a unit of the rate limit per member it writes; a cancelled batch answers at once, a finished
  one 409.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import cursors, ids, settings
from shared.batches import callbacks
from shared.errors import Conflict, InvalidRequest, NotFound, QuotaExceeded, Unavailable
from shared.flow.unique import Unique, duplicate_reason
from shared.jobs import enqueue
from shared.model.message import BatchMember, JobMessage
from shared.store.batches import batch_items, batch_members
from shared.store.batches.batch_items import BatchRecord
from shared.store.flow import unique_keys
from shared.store.id_secret import id_secret
from shared.store.jobs import job_control, job_store
from shared.tenants import quotas, rate_limit

if TYPE_CHECKING:
    from shared.store.flow.debounce_items import Arrived

# A batch's members are cancelled side by side, and a page's counts read side by side.
_writers = ThreadPoolExecutor(max_workers=10, thread_name_prefix="batch")
_CURSORS = cursors.Codec("b1", re.compile(r"\d{13}#b[a-z2-7]{1,64}"))  # a position in the batches' index


@dataclass(frozen=True)
class BatchRequest:
    jobs: Sequence[enqueue.JobRequest]
    on_complete: Mapping[str, Any] | None = None
    on_success: Mapping[str, Any] | None = None
    description: str | None = None
    idempotency_key: str | None = None  # the same key is the same batch: a retried request sends its jobs again

    def fingerprint(self) -> str:
        """What the batch's idempotency key remembers of this request (shared/ids.py `request_fingerprint`)."""
        fields = {
            "jobs": [job.canonical() for job in self.jobs],
            "on_complete": enqueue.present_fields(self.on_complete),
            "on_success": enqueue.present_fields(self.on_success),
            "description": self.description,
        }
        return ids.request_fingerprint({name: value for name, value in fields.items() if value is not None})


def create(tenant: str, request: BatchRequest) -> BatchRecord:
    """Check every job and callback, write the batch, send its jobs. InvalidRequest (naming `jobs[i].field`),
    QuotaExceeded or RateLimited before anything is written or sent; Unavailable if some jobs could not
    be sent (the same request with the same idempotency key sends them).

    With an idempotency key: the key's first request makes the batch and its fingerprint is kept with it.
    The same request again answers that batch; it sends nothing once the first sent every job (counting
    one against the rate limit), else it sends them all again (their ids are the same: none runs twice).
    Another request with the key is refused (Conflict naming `idempotency_key`), with nothing written or
    sent: its jobs would take the first request's members' ids (docs/decisions/idempotency-keys.md)."""
    now = time.time()
    if not 1 <= len(request.jobs) <= settings.MAX_BATCH_SIZE:
        raise InvalidRequest("jobs", f"a batch holds 1 to {settings.MAX_BATCH_SIZE} jobs")
    checked = [_checked_member(tenant, index, job, now) for index, job in enumerate(request.jobs)]
    specs = {
        kind: enqueue.check_callback(tenant, body, field=kind, adds="batch")
        for kind, body in (("on_complete", request.on_complete), ("on_success", request.on_success))
        if body is not None
    }
    secret = id_secret()
    batch_id = ids.batch_id(secret, tenant, now, request.idempotency_key)
    fingerprint = request.fingerprint() if request.idempotency_key is not None else None
    if request.idempotency_key is not None:
        existing = batch_items.get(batch_id)
        if existing is not None:
            _same_request(existing, request, fingerprint)
            if existing.all_sent_at is not None:
                rate_limit.check(tenant)  # answered from its key: nothing sent, counts one
                return existing
    _check_far_future_quota(tenant, checked)
    rate_limit.check(tenant, sum(job.jobs for job in request.jobs) + len(specs))  # every job, callbacks too
    batch = batch_items.create(
        batch_id, tenant, len(checked), now, description=request.description, callbacks=specs, request=fingerprint
    )
    _same_request(batch, request, fingerprint)  # another request with the key may have come first meanwhile
    messages = [
        enqueue.message_of(
            tenant,
            job,
            spec,
            ids.child_id(secret, tenant, batch_id, str(index)),
            batch.created_at,
            debounce=spec.flow.debounce,
            batch=BatchMember(batch_id, index),
        )
        for index, (job, spec) in enumerate(zip(request.jobs, checked, strict=True))
    ]
    flow = _MembersFlow(tenant, now)
    try:
        prepared = [
            flow.arrive(job, message, spec) for job, message, spec in zip(request.jobs, messages, checked, strict=True)
        ]
    except Exception:
        flow.not_sent(range(len(flow.arrived)))
        raise
    problems = enqueue.send_prepared(prepared, now)
    flow.not_sent(index for index, problem in enumerate(problems) if problem is not None)
    flow.sent(index for index, problem in enumerate(problems) if problem is None)
    if any(problem is not None for problem in problems):
        failed = sum(1 for problem in problems if problem is not None)
        raise Unavailable(
            f"{failed} of the batch's {len(prepared)} jobs could not be sent; send the same request again "
            "with the same idempotency_key: it sends them, and jobs sent already do not run twice"
        )
    if request.idempotency_key is not None:
        batch_items.mark_all_sent(batch_id, time.time())
    return batch


def _same_request(batch: BatchRecord, request: BatchRequest, fingerprint: str | None) -> None:
    """Conflict (naming `idempotency_key`) unless `batch` was made by this same request. A batch kept
    without a fingerprint (made before they were kept) is compared by its number of jobs alone."""
    same = batch.request == fingerprint if batch.request is not None else batch.total == len(request.jobs)
    if not same:
        raise Conflict(
            f"this idempotency_key was used for another request (batch {batch.id}); a key names one request: "
            "use a new key for a new batch",
            field="idempotency_key",
        )


def _checked_member(tenant: str, index: int, job: enqueue.JobRequest, now: float) -> enqueue.CheckedJob:
    field = f"jobs[{index}]"
    if job.idempotency_key is not None:
        why = "a batch's jobs take their ids from the batch: give the batch an idempotency_key instead"
        raise InvalidRequest(f"{field}.idempotency_key", why)
    return enqueue.checked(tenant, job, now, field_prefix=f"{field}.")


@dataclass
class _MembersFlow:
    """The flow-control writes of a batch's members, in index order (so members of one key meet in that order):
    a debounced member's arrival in its key's group, a unique member's lock. A member whose unique key another job
    holds is recorded `skipped` naming that job, and its message is still sent, without its debounce: the worker
    finds it finished and counts it in its batch, as it counts every member (docs/decisions/batches.md)."""

    tenant: str
    now: float
    arrived: list[tuple[JobMessage, Arrived | None, Unique | None]] = field(default_factory=list)

    def arrive(
        self, job: enqueue.JobRequest, message: JobMessage, spec: enqueue.CheckedJob
    ) -> tuple[enqueue.JobRequest, JobMessage, float]:
        """The member's (request, message, delay) to send, once its key's group or lock has taken it."""
        delay, unique, arrival = spec.delay, spec.flow.unique, None
        if unique is not None:
            holder = unique_keys.take(self.tenant, unique, message.id, self.now, self.now + delay)
            if holder is not None:
                job_store.record_skipped(message, duplicate_reason(unique.key, holder.id), holder.id, self.now)
                message, unique = replace(message, debounce=None), None
        if message.debounce is not None:
            from shared.store.flow import debounce_items  # only a debounced member needs its group's item

            try:
                message, arrival = debounce_items.arrive_message(message, self.now)
            except Exception:
                if unique is not None:
                    unique_keys.not_sent(self.tenant, unique, message.id)
                raise
            delay = arrival.delay_seconds
        self.arrived.append((message, arrival, unique))
        return job, message, delay

    def sent(self, indexes: Iterable[int]) -> None:
        for index in indexes:
            message, _, unique = self.arrived[index]
            if unique is not None:
                unique_keys.sent(self.tenant, unique, message.id)

    def not_sent(self, indexes: Iterable[int]) -> None:
        """Give back what these members took: the last first, so a group goes back as it was."""
        from shared.store.flow import debounce_items

        for index in sorted(indexes, reverse=True):
            message, arrival, unique = self.arrived[index]
            if arrival is not None:
                debounce_items.undo_unsent(message, arrival)
            if unique is not None:
                with contextlib.suppress(ClientError, BotoCoreError):
                    unique_keys.not_sent(self.tenant, unique, message.id)


def _check_far_future_quota(tenant: str, checked: list[enqueue.CheckedJob]) -> None:
    """Jobs due beyond SQS's 15 minutes each hold a unit of the tenant's far-future quota: refuse the batch
    before sending any if they would not all fit (each still takes its unit as it is sent)."""
    far = sum(1 for job in checked if job.delay > settings.MAX_SQS_DELAY_SECONDS)
    if not far:
        return
    limit = quotas.limits_for(tenant).max_far_future_jobs
    held = quotas.usage(tenant)[quotas.FAR_FUTURE_JOBS.counter]
    if held + far > limit:
        raise QuotaExceeded(quotas.FAR_FUTURE_JOBS.noun, quotas.FAR_FUTURE_JOBS.limit_name, limit, held, far)


def get(tenant: str, batch_id: str) -> BatchRecord:
    """The batch, if it is this tenant's; NotFound otherwise (another tenant's looks like no batch)."""
    _verified(tenant, batch_id)
    batch = batch_items.get(batch_id)
    if batch is None or batch.tenant != tenant:
        raise NotFound(batch_id)
    return batch


def _verified(tenant: str, batch_id: str) -> None:
    """NotFound unless `batch_id` was minted for this tenant: another tenant's id is not even read."""
    if not ids.verify_batch(id_secret(), tenant, batch_id):
        raise NotFound(batch_id)


def member_ids(tenant: str, batch: BatchRecord) -> list[str]:
    """Its jobs' ids, in order (derived, not stored)."""
    secret = id_secret()
    return [ids.child_id(secret, tenant, batch.id, str(index)) for index in range(batch.total)]


@dataclass(frozen=True)
class BatchPage:
    batches: list[dict[str, Any]]
    next_cursor: str | None


def list_batches(tenant: str, *, status: str | None, cursor: str | None, limit: int) -> BatchPage:
    """The tenant's batches, newest first; each with its counts."""
    if status is not None and status not in batch_items.STATUSES:
        raise InvalidRequest("status", f"must be one of {', '.join(batch_items.STATUSES)}")
    before = _CURSORS.decode(cursor) if cursor else None
    listed, next_before = batch_items.page(tenant, status=status, before=before, limit=limit)
    found = list(_writers.map(batch_items.get, [each.id for each in listed]))
    shown = [callbacks.batch_view(batch) for batch in found if batch is not None and batch.tenant == tenant]
    return BatchPage(shown, _CURSORS.encode(next_before) if next_before else None)


def cancel(tenant: str, batch_id: str) -> BatchRecord:
    """Cancel the batch: its members still pending that have not started are cancelled (as POST
    /v1/jobs/{id}/cancel would), the rest run to their end and are counted, and the batch runs no callback.

    It costs what it writes: one unit of the tenant's rate limit per member it finds pending (all or
    none, before any write), one for a call that has nothing to write. A batch already cancelled is
    answered at once; a finished one is refused (Conflict: it stays as it ended). Only the members the
    counts item shows pending are written, and a refused write brings nothing back.
    """
    found = _owned_with_members(tenant, batch_id)
    batch = found.batch
    pending = [] if batch.cancel_done_at is not None else found.pending()
    rate_limit.check(tenant, max(1, len(pending)))
    if batch.cancel_done_at is not None:
        return batch
    if not pending and batch.cancel_requested_at is None:
        raise _finished(batch)
    now = time.time()
    if not batch_items.request_cancel(batch.id, now):  # its last member ended since the read
        latest = batch_items.get(batch.id)
        raise _finished(latest or batch)
    secret = id_secret()
    runs = list(
        _writers.map(
            lambda index: job_control.cancel_member(
                ids.child_id(secret, tenant, batch.id, str(index)), tenant, batch.created_at, now
            ),
            [index for index, _ in pending],
        )
    )
    cancelled = [(index, run) for (index, _), run in zip(pending, runs, strict=True) if run is not None]
    batch_members.mark_cancelled(batch.id, cancelled)
    after = batch_items.finish_cancel(batch.id, time.time())
    return batch_items.settle(after, time.time()) if after is not None else batch


def _owned_with_members(tenant: str, batch_id: str) -> batch_members.BatchWithMembers:
    _verified(tenant, batch_id)
    found = batch_members.get_with_members(batch_id)
    if found is None or found.batch.tenant != tenant:
        raise NotFound(batch_id)
    return found


def _finished(batch: BatchRecord) -> Conflict:
    return Conflict(
        f"batch {batch.id} already finished ({batch.status}): every job has ended, so there is nothing to cancel"
    )
