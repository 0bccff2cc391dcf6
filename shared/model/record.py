"""A job's record as the API shows it (`JobRecord`): what GET /v1/jobs/{id}, a listing, the dashboard and
a callback's `parent` see, with an `http` job's header values redacted (`shown_payload`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.model.spec import Concurrency
from shared.model.states import Status, Trigger

_NOT_RECORDED = object()

REDACTED = "[redacted]"
# Job types whose payload holds a request's headers (shared/targets/http.py): no view shows their values,
# which are credentials as often as not (Authorization, X-Api-Key, a partner's token by any name); the
# worker sends them as stored.
HEADER_PAYLOAD_TYPES = frozenset({"http"})


def shown_payload(job_type: str | None, payload: Any) -> Any:
    """A job's payload as every view shows it: an `http` job's header values redacted, their names kept."""
    if job_type in HEADER_PAYLOAD_TYPES and isinstance(payload, dict) and isinstance(payload.get("headers"), dict):
        return {**payload, "headers": dict.fromkeys(payload["headers"], REDACTED)}
    return payload


@dataclass
class JobRecord:
    """What GET /v1/jobs/{id} (and, without result and payload, each item of GET /v1/jobs) shows."""

    id: str
    status: Status
    type: str | None = None
    attempts: int = 0
    result: Any = None
    error: str | None = None
    enqueued_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    schedule: str | None = None
    scheduled_for: str | None = None
    max_attempts: int | None = None
    timeout_seconds: int | None = None
    payload: Any = _NOT_RECORDED  # recorded when a worker first sees the job (or a cancel knows it)
    cancelled_at: float | None = None
    retries: int = 0  # times POST /v1/jobs/{id}/retry started it over
    tenant: str = ""  # whose job it is ("" where the record does not say: a listing's projection)
    concurrency: Concurrency | None = None  # the job's own concurrency key (its message's), if it gave one
    batch: str | None = None  # the id of the batch it belongs to
    batch_index: int | None = None  # its place in the batch (not shown: its id is derived from it)
    parent: dict[str, str] | None = None  # a callback's parent (JobMessage.parent)
    started_by: dict[str, str] | None = None  # a trigger's job: its trigger and event (JobMessage.started_by)
    # Its callbacks: kind -> the callback job's id once enqueued, None until then.
    callbacks: dict[str, str | None] | None = None
    trigger: str | None = None  # a schedule's run: "manual" or "backfill"; None: the schedule's own firing
    skip_reason: str | None = None  # a `skipped` run: why it did not run
    request: str | None = None  # a keyed job: the fingerprint of the request that runs (JobMessage.request)
    priority: str | None = None  # its lane, "high" or "low" (JobMessage.priority); None: default
    # A durable job's (docs/decisions/durable-jobs.md): what it waits for while `waiting`, whether it keeps a
    # journal, and its steps as the view shows them (read from the journal by whoever builds the view).
    waiting_for: dict[str, Any] | None = None
    journal: bool = False
    steps: list[dict[str, Any]] | None = None
    # A job not yet claimed that waits its throttle's turn or its debounce group: what for, as its first wait for it
    # wrote it (shared/store/jobs/waiting_jobs.py `show_queued_wait`); the view shows it as `waiting_for`.
    queued_waiting_for: dict[str, Any] | None = None

    @property
    def payload_recorded(self) -> bool:
        return self.payload is not _NOT_RECORDED

    def public(self, *, with_bodies: bool = True) -> dict[str, Any]:
        """The API's job view (GET, the dashboard, a callback's `parent`); `with_bodies=False` leaves out
        result and payload (list pages). An `http` job's header values are redacted (`shown_payload`)."""
        view: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "status": str(self.status),
            "attempts": self.attempts,
            "result": self.result,
            "error": self.error,
            "enqueued_at": self.enqueued_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "max_attempts": self.max_attempts,
        }
        if not with_bodies:
            del view["result"]
        elif self.payload_recorded:
            view["payload"] = shown_payload(self.type, self.payload)
        if self.timeout_seconds is not None:
            view["timeout_seconds"] = self.timeout_seconds
        if self.schedule:
            view["schedule"] = self.schedule
            view["scheduled_for"] = self.scheduled_for
            view["trigger"] = self.trigger or str(Trigger.SCHEDULE)
        if self.skip_reason is not None:
            view["reason"] = self.skip_reason
        if self.cancelled_at is not None:
            view["cancelled_at"] = self.cancelled_at
        if self.retries:
            view["retries"] = self.retries
        if self.concurrency is not None:
            view["concurrency"] = self.concurrency.to_dict()
        if self.batch is not None:
            view["batch"] = self.batch
        if self.parent is not None:
            view["parent"] = self.parent
        if self.started_by is not None:
            view["started_by"] = self.started_by
        if self.callbacks is not None:
            view["callbacks"] = self.callbacks
        if self.request is not None:
            view["request"] = self.request
        if self.priority is not None:
            view["priority"] = self.priority
        if self.status is Status.WAITING and self.waiting_for is not None:
            view["waiting_for"] = self.waiting_for
        if self.status is Status.QUEUED and self.queued_waiting_for is not None:
            view["waiting_for"] = self.queued_waiting_for
        if self.steps is not None:
            view["steps"] = self.steps
        return view
