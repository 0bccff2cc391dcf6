"""What a job is, whenever and however it is enqueued (`JobSpec`), its own concurrency key (`Concurrency`),
and a job enqueued when another job or a batch ends (`Callback`: a spec with its options)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class JobSpec:
    """What a job is, whenever and however it is enqueued: now, later, or by each firing of a schedule."""

    type: str
    payload: Any = None
    max_attempts: int | None = None  # None: the job type's default
    timeout_seconds: int | None = None  # each attempt's; None: the job type's default


@dataclass(frozen=True)
class Concurrency:
    """At most `limit` of a tenant's jobs with this `key` run at once (docs/decisions/concurrency-keys.md)."""

    key: str
    limit: int

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "limit": self.limit}

    @classmethod
    def of(cls, value: Any) -> Concurrency | None:
        """A message's `concurrency` field, checked already (shared/model/message.py)."""
        return None if value is None else cls(key=value["key"], limit=value["limit"])


CALLBACK_KINDS = ("on_success", "on_failure")  # a job's own callbacks; a batch's: BATCH_CALLBACK_KINDS
BATCH_CALLBACK_KINDS = ("on_complete", "on_success")


@dataclass(frozen=True)
class Callback:
    """A job enqueued when another job (or a batch) ends (docs/decisions/callbacks.md): its spec, with its
    max_attempts decided; its own concurrency key; and, for a job's callback, whether its parent's view
    carries the parent's payload.

    On the wire (a job message's `callbacks`, a record's, a batch's) a callback is one flat object: the
    spec's fields beside its options (`fields()`), written only when set, in that order."""

    spec: JobSpec
    concurrency: Concurrency | None = None
    include_parent_payload: bool = False

    @staticmethod
    def fields() -> tuple[str, ...]:
        """The names a callback's object may hold: its spec's, then its options'."""
        return tuple(field.name for field in fields(JobSpec)) + tuple(
            field.name for field in fields(Callback) if field.name != "spec"
        )

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": self.spec.type,
            "payload": self.spec.payload,
            "max_attempts": self.spec.max_attempts,
        }
        if self.spec.timeout_seconds is not None:
            body["timeout_seconds"] = self.spec.timeout_seconds
        if self.concurrency is not None:
            body["concurrency"] = self.concurrency.to_dict()
        if self.include_parent_payload:
            body["include_parent_payload"] = True
        return body

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> Callback:
        """A callback's object as `to_dict` wrote it (checked already, where it came from a message)."""
        return cls(
            JobSpec(value["type"], value.get("payload"), value["max_attempts"], value.get("timeout_seconds")),
            Concurrency.of(value.get("concurrency")),
            bool(value.get("include_parent_payload", False)),
        )


def callbacks_to_dict(callbacks: Mapping[str, Callback]) -> dict[str, dict[str, Any]]:
    """Callbacks by kind, as their objects (a message's `callbacks`, a record's, a batch's)."""
    return {kind: callback.to_dict() for kind, callback in callbacks.items()}


def callbacks_of(value: Mapping[str, Mapping[str, Any]]) -> dict[str, Callback]:
    """`callbacks_to_dict`, read back."""
    return {kind: Callback.of(body) for kind, body in value.items()}
