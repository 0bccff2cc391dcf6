"""Callbacks: jobs enqueued when another job, or a batch, ends (docs/decisions/callbacks.md).

A job's `on_success` / `on_failure` is a job body (type, payload, max_attempts, timeout_seconds,
concurrency); it is enqueued once the job is recorded `succeeded` / `dead`, with its payload plus
`"parent"`: the finished job's view, with its result or error, and with its payload only if the callback
asks (`"include_parent_payload": true`): a callback often goes to another party than its parent did, and
a payload may hold what only the parent's target should see (an `http` job's header values are
redacted in every view anyway: shared/model.py `shown_payload`). A batch's `on_complete` / `on_success`
(shared/jobs/batches.py) gets `"batch"`: the batch's view. Any type will do: an `http` callback is a
callback URL, signed like every HTTP job.

Exactly once: a callback's id is derived from its parent and its kind (`ids.child_id`), so however
many deliveries of the parent send it (a redelivery after a crash between the send and its mark),
it is one job, which the claim runs once. Once sent, the parent's record (or the batch's item) marks
it sent, and no later delivery sends it again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from shared import ids, settings
from shared.aws import queue
from shared.jobs import enqueue
from shared.model import Concurrency, JobMessage, JobRecord, JobSpec, Status
from shared.store import job_store
from shared.store.id_secret import id_secret

# Room a callback's payload leaves for its parent's view (enqueue.check_callback keeps it).
_VIEW_ROOM_BYTES = enqueue.CALLBACK_VIEW_ROOM_BYTES


def message(
    tenant: str, spec: Mapping[str, Any], *, parent: dict[str, str], adds: str, view: dict[str, Any], now: float
) -> JobMessage:
    """The callback's job message: its id derived from its parent and kind, its payload with `adds`."""
    fitted = _fitted(view, settings.MAX_PAYLOAD_BYTES - _size(spec))
    payload = enqueue.with_view(spec["type"], spec.get("payload"), adds, fitted)
    job = JobSpec(spec["type"], payload, spec["max_attempts"], spec.get("timeout_seconds"))
    return JobMessage.of(
        job,
        job_id=callback_id(tenant, parent["id"], parent["callback"]),
        tenant=tenant,
        enqueued_at=now,
        concurrency=Concurrency.of(spec.get("concurrency")),
        parent=parent,
    )


def callback_id(tenant: str, parent_id: str, kind: str) -> str:
    return ids.child_id(id_secret(), tenant, parent_id, kind)


def _size(spec: Mapping[str, Any]) -> int:
    return len(json.dumps(spec.get("payload") or {}).encode())


def _fitted(view: dict[str, Any], room: int) -> dict[str, Any]:
    """The parent's view within `room` bytes: without its payload, then without its result, if need be."""
    for dropped in ((), ("payload",), ("payload", "result")):
        fitted = {name: value for name, value in view.items() if name not in dropped}
        if dropped:
            fitted["omitted"] = list(dropped)  # GET the parent for them
        if len(json.dumps(fitted, default=str).encode()) <= room:
            return fitted
    return {name: view.get(name) for name in ("id", "status") if name in view} | {"omitted": ["the rest"]}


def parent_view(record: JobRecord, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The finished job's view a callback gets: GET's, without the payload unless the callback asks for it."""
    view = record.public()
    if not spec.get("include_parent_payload"):
        view.pop("payload", None)
    return view


def enqueue_job_callback(job: JobMessage, status: Status, *, single_attempt: bool = False) -> None:
    """Enqueue the callback `job`'s end calls for (on_success when it succeeded, on_failure when it is
    dead), unless its record says it was sent. Idempotent; raises what the store or queue raises.
    `single_attempt`: each store call makes one attempt (the worker's)."""
    kind = {Status.SUCCEEDED: "on_success", Status.DEAD: "on_failure"}.get(status)
    spec = (job.callbacks or {}).get(kind or "")
    if kind is None or spec is None:
        return
    record = job_store.get(job.id, consistent=True, single_attempt=single_attempt)
    if record is None or record.status is not status or (record.callbacks or {}).get(kind):
        return  # not ended so (retried since), or sent already
    now = time.time()
    parent = {"kind": "job", "id": job.id, "callback": kind}
    callback = message(job.tenant, spec, parent=parent, adds="parent", view=parent_view(record, spec), now=now)
    queue.send(callback)
    job_store.mark_callback_sent(job.id, kind, callback.id, single_attempt=single_attempt)
