"""A job as it travels (the queue message) and as it is recorded (the store item)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # will retry
    DEAD = "dead"  # gave up; its message is in the DLQ
    CANCELLED = "cancelled"  # cancelled before it ran; a delivery of it is acknowledged, never run

    @property
    def finished(self) -> bool:
        return self in (Status.SUCCEEDED, Status.DEAD, Status.CANCELLED)


@dataclass(frozen=True)
class JobMessage:
    """The SQS message body. Version 1."""

    id: str
    tenant: str
    type: str
    payload: Any
    max_attempts: int
    enqueued_at: float  # epoch seconds, when the API accepted it
    schedule: str | None = None
    scheduled_for: str | None = None
    v: int = 1

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None}, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobMessage:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


_NOT_RECORDED = object()


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
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def payload_recorded(self) -> bool:
        return self.payload is not _NOT_RECORDED

    def public(self, *, with_bodies: bool = True) -> dict[str, Any]:
        """The API's job view; `with_bodies=False` leaves out result and payload (list pages)."""
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
            view["payload"] = self.payload
        if self.timeout_seconds is not None:
            view["timeout_seconds"] = self.timeout_seconds
        if self.schedule:
            view["schedule"] = self.schedule
            view["scheduled_for"] = self.scheduled_for
        if self.cancelled_at is not None:
            view["cancelled_at"] = self.cancelled_at
        if self.retries:
            view["retries"] = self.retries
        return view
