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

    @property
    def finished(self) -> bool:
        return self in (Status.SUCCEEDED, Status.DEAD)


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
    timeout_seconds: int | None = None  # this job's own timeout (1-900); None: its type's default
    v: int = 1

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None}, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobMessage:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class JobRecord:
    """What GET /v1/jobs/{id} shows."""

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
    extra: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        view = {
            "id": self.id,
            "type": self.type,
            "status": str(self.status),
            "attempts": self.attempts,
            "result": self.result,
            "error": self.error,
            "enqueued_at": self.enqueued_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }
        if self.schedule:
            view["schedule"] = self.schedule
            view["scheduled_for"] = self.scheduled_for
        return view
