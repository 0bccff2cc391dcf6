"""The request models more than one set of routes reads: a job's spec, enqueued now or fired by a schedule.

Imported only with the resolver's routes (functions/api/jobs.py, functions/api/schedules.py), never on
the enqueue path, which validates with the generated schemas (functions/api/job_schemas.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, with_config
from typing_extensions import NotRequired, TypedDict  # noqa: UP035 - pydantic needs these on Python < 3.12

from shared import settings
from shared.flow import limits
from shared.model.spec import JobSpec


class JobSpecIn(BaseModel):
    """What a job is: shared.model.spec.JobSpec, field for field."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1, max_length=64, description="A registered job type, e.g. echo")
    payload: Any = Field(default=None, description=f"Any JSON, at most {settings.MAX_PAYLOAD_BYTES} bytes")
    # Unset: the job type's own default (its @job_type options), not the platform's.
    max_attempts: int | None = Field(default=None, ge=1, le=settings.MAX_MAX_ATTEMPTS)
    timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=settings.MAX_JOB_TIMEOUT_SECONDS,
        description="Stop an attempt after this many seconds (default: the job type's; at most its maximum)",
    )

    def spec(self) -> JobSpec:
        return JobSpec(
            type=self.type, payload=self.payload, max_attempts=self.max_attempts, timeout_seconds=self.timeout_seconds
        )


def idempotency_key_field(description: str) -> Any:
    """A request's `idempotency_key`: one key names one request (docs/decisions/idempotency-keys.md)."""
    return Field(default=None, min_length=1, max_length=255, description=description)


# TypedDicts, not models: their core schemas have no class, so the enqueue routes validate them from the
# generated schemas (functions/api/job_schemas.py) as they do the rest of a job's body. One class per
# field: pydantic would share a class used twice as a definition, which the generated schema cannot hold.


def concurrency_model(name: str) -> Any:
    """{"key", "limit"}: at most `limit` of this tenant's jobs with this `key` run at once; the others wait."""
    fields = {
        "key": Annotated[str, Field(min_length=1, max_length=settings.MAX_CONCURRENCY_KEY_CHARS)],
        "limit": Annotated[int, Field(ge=1, le=settings.MAX_CONCURRENCY_LIMIT)],
    }
    return with_config(ConfigDict(extra="forbid"))(TypedDict(name, fields))  # type: ignore[operator]


def unique_model(name: str) -> Any:
    """{"key", "until", "for_seconds"?}: while a job with this key waits (or runs, until finished), enqueuing another
    answers it, `duplicate`, and enqueues nothing (docs/decisions/unique-jobs.md)."""
    fields = {
        "key": Annotated[str, Field(min_length=1, max_length=limits.MAX_FLOW_KEY_CHARS)],
        "until": Literal["started", "finished"],
        "for_seconds": NotRequired[Annotated[int, Field(ge=1, le=limits.UNIQUE_MAX_FOR_SECONDS)]],
    }
    return with_config(ConfigDict(extra="forbid"))(TypedDict(name, fields))  # type: ignore[operator]


def throttle_model(name: str) -> Any:
    """{"key", "limit", "period_seconds"}: at most `limit` of the tenant's jobs with this key start in any window of
    `period_seconds` (docs/decisions/throttle.md)."""
    fields = {
        "key": Annotated[str, Field(min_length=1, max_length=limits.MAX_FLOW_KEY_CHARS)],
        "limit": Annotated[int, Field(ge=1, le=limits.THROTTLE_MAX_LIMIT)],
        "period_seconds": Annotated[
            int, Field(ge=limits.THROTTLE_MIN_PERIOD_SECONDS, le=limits.THROTTLE_MAX_PERIOD_SECONDS)
        ],
    }
    return with_config(ConfigDict(extra="forbid"))(TypedDict(name, fields))  # type: ignore[operator]


ThrottleIn = throttle_model("ThrottleIn")


def debounce_model(name: str) -> Any:
    """{"key", "period_seconds", "max_wait_seconds"?}: the tenant's jobs with this key arriving within
    `period_seconds` of each other run once, the last one's payload; the others end `skipped` naming it
    (docs/decisions/debounce.md). `max_wait_seconds` is at least `period_seconds` (checked with the job)."""
    fields = {
        "key": Annotated[str, Field(min_length=1, max_length=limits.MAX_FLOW_KEY_CHARS)],
        "period_seconds": Annotated[
            int, Field(ge=limits.DEBOUNCE_MIN_PERIOD_SECONDS, le=limits.DEBOUNCE_MAX_PERIOD_SECONDS)
        ],
        "max_wait_seconds": NotRequired[
            Annotated[int, Field(ge=limits.DEBOUNCE_MIN_PERIOD_SECONDS, le=limits.DEBOUNCE_MAX_WAIT_SECONDS)]
        ],
    }
    return with_config(ConfigDict(extra="forbid"))(TypedDict(name, fields))  # type: ignore[operator]


DebounceIn = debounce_model("DebounceIn")


def _limits_of(field: str) -> Any:
    """A JobSpecIn field's type with its limits (not its description): a callback's field is checked alike."""
    declared = JobSpecIn.model_fields[field]
    return Annotated[declared.annotation, *declared.metadata] if declared.metadata else declared.annotation


def callback_model(name: str, *, adds: str = "parent") -> Any:
    """A job enqueued when another job (or a batch) ends (shared.model.spec.Callback): a job's spec, its
    payload an object, which gets `adds`: `parent` (the job's view) or `batch` (the batch's); and the
    callback's options: its concurrency key, and, for a job's callback, whether its parent's view holds the
    parent's payload."""
    fields: dict[str, Any] = {
        field: _limits_of(field) if declared.is_required() else NotRequired[_limits_of(field)]
        for field, declared in JobSpecIn.model_fields.items()
    }
    fields["payload"] = NotRequired[dict[str, Any] | None]  # an object: the callback's view goes in it
    fields["concurrency"] = NotRequired[concurrency_model(f"{name}Concurrency") | None]
    if adds == "parent":
        fields["include_parent_payload"] = NotRequired[
            Annotated[
                bool | None,
                Field(
                    strict=True,  # true or false, not "yes" or 1
                    description="Put the parent's payload in its view (`parent.payload`); left out by default, "
                    "as a callback may go to another party than its parent did. An http parent's header values "
                    "are redacted either way.",
                ),
            ]
        ]
    return with_config(ConfigDict(extra="forbid"))(TypedDict(name, fields))  # type: ignore[operator]
