"""Callbacks: jobs enqueued when another job, or a batch, ends (docs/decisions/callbacks.md).

A job's `on_success` / `on_failure` is a job body (type, payload, max_attempts, timeout_seconds,
concurrency); it is enqueued once the job is recorded `succeeded` / `dead`, with its payload plus
`"parent"`: the finished job's view, with its result or error, and with its payload only if the callback
asks (`"include_parent_payload": true`): a callback often goes to another party than its parent did, and
a payload may hold what only the parent's target should see (an `http` job's header values are
redacted in every view anyway: shared/model/record.py `shown_payload`). A batch's `on_complete` /
`on_success` (shared/batches/batches.py) gets `"batch"`: the batch's view (`batch_view`, which GET
/v1/batches/{id} answers too). Any type will do: an `http` callback is a callback URL, signed like every
HTTP job.

Exactly once: a callback's id is derived from its parent and its kind (`ids.child_id`), so however
many deliveries of the parent send it (a redelivery after a crash between the send and its mark),
it is one job, which the claim runs once. Once sent, the parent's record (or the batch's item) marks
it sent, and no later delivery sends it again.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from shared import ids, settings
from shared.aws import queue
from shared.jobs.callback_bodies import with_view
from shared.model.message import JobMessage
from shared.model.record import JobRecord
from shared.model.spec import BATCH_CALLBACK_KINDS, Callback
from shared.model.states import Status
from shared.store.batches.batch_items import BatchRecord
from shared.store.id_secret import id_secret
from shared.store.jobs import job_store


def message(
    tenant: str, callback: Callback, *, parent: dict[str, str], adds: str, view: dict[str, Any], now: float
) -> JobMessage:
    """The callback's job message: its id derived from its parent and kind, its payload with `adds`."""
    spec = callback.spec
    fitted = _fitted(view, settings.MAX_PAYLOAD_BYTES - _size(spec.payload))
    return JobMessage.of(
        replace(spec, payload=with_view(spec.type, spec.payload, adds, fitted)),
        job_id=callback_id(tenant, parent["id"], parent["callback"]),
        tenant=tenant,
        enqueued_at=now,
        concurrency=callback.concurrency,
        parent=parent,
    )


def callback_id(tenant: str, parent_id: str, kind: str) -> str:
    return ids.child_id(id_secret(), tenant, parent_id, kind)


def _size(payload: Any) -> int:
    return len(json.dumps(payload or {}).encode())


def _fitted(view: dict[str, Any], room: int) -> dict[str, Any]:
    """The parent's view within `room` bytes: without its payload, then without its result, if need be."""
    for dropped in ((), ("payload",), ("payload", "result")):
        fitted = {name: value for name, value in view.items() if name not in dropped}
        if dropped:
            fitted["omitted"] = list(dropped)  # GET the parent for them
        if len(json.dumps(fitted, default=str).encode()) <= room:
            return fitted
    return {name: view.get(name) for name in ("id", "status") if name in view} | {"omitted": ["the rest"]}


def parent_view(record: JobRecord, callback: Callback) -> dict[str, Any]:
    """The finished job's view a callback gets: GET's, without the payload unless the callback asks for it."""
    view = record.public()
    if not callback.include_parent_payload:
        view.pop("payload", None)
    return view


def enqueue_job_callback(job: JobMessage, status: Status, *, single_attempt: bool = False) -> None:
    """Enqueue the callback `job`'s end calls for (on_success when it succeeded, on_failure when it is
    dead), unless its record says it was sent. Idempotent; raises what the store or queue raises.
    `single_attempt`: each store call makes one attempt (the worker's)."""
    kind = {Status.SUCCEEDED: "on_success", Status.DEAD: "on_failure"}.get(status)
    callback = (job.callbacks or {}).get(kind or "")
    if kind is None or callback is None:
        return
    record = job_store.get(job.id, consistent=True, single_attempt=single_attempt)
    if record is None or record.status is not status or (record.callbacks or {}).get(kind):
        return  # not ended so (retried since), or sent already
    now = time.time()
    parent = {"kind": "job", "id": job.id, "callback": kind}
    sent = message(job.tenant, callback, parent=parent, adds="parent", view=parent_view(record, callback), now=now)
    queue.send(sent)
    job_store.mark_callback_sent(job.id, kind, sent.id, single_attempt=single_attempt)


def batch_view(batch: BatchRecord) -> dict[str, Any]:
    """What GET /v1/batches/{id} answers, and a batch callback's payload carries as `batch`."""
    shown: dict[str, Any] = {
        "id": batch.id,
        "status": batch.status,
        "total": batch.total,
        "pending": batch.pending,
        "succeeded": batch.succeeded,
        "dead": batch.dead,
        "cancelled": batch.cancelled,
        "skipped": batch.skipped,
        "created_at": batch.created_at,
        "finished_at": batch.finished_at if batch.pending == 0 else None,
        "callbacks": {
            kind: callback_id(batch.tenant, batch.id, kind) if kind in batch.due else None
            for kind in BATCH_CALLBACK_KINDS
            if kind in batch.callbacks
        },
    }
    if batch.description:
        shown["description"] = batch.description
    if batch.cancel_requested_at is not None:
        shown["cancelled_at"] = batch.cancel_requested_at
    return shown
