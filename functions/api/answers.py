"""What each route answers on success, as pydantic models: the OpenAPI document's answer shapes.

Declared in each route's `responses=documented({status: answer(Model, "...")}, ...)` for the document
(and the TypeScript SDK's types generated from it) only: a route answers the domain's view as it is
(`JobRecord.public()`, `callbacks.batch_view`, ...), never re-validated on its way out, so the answers cost
nothing more and stay exactly as they were. tests/unit/api/test_answers.py sends every route a
request and checks each answer against the shape its route declares: a field added to a view
without its line here fails it (every model forbids fields it does not name).

Imported only where the resolver's routes are declared, never on the enqueue path.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.model.states import Overlap, Status, Trigger


class _Answer(BaseModel):
    # Built when the document is (GET /v1/openapi.json), not when the routes are declared: the first request
    # off the enqueue path does not pay for them.
    model_config = ConfigDict(extra="forbid", defer_build=True)


# --- jobs ---


class AcceptedOut(_Answer):
    id: str = Field(description="The job's id (GET /v1/jobs/{id})")
    status: Literal["queued"]
    request: str | None = Field(
        default=None,
        description="With an idempotency_key: the fingerprint of this request; GET /v1/jobs/{id} shows the one "
        "that runs under the key",
    )


class DuplicateOut(_Answer):
    id: str = Field(description="The job that holds the unique key (GET /v1/jobs/{id}); nothing was enqueued")
    status: Literal["duplicate"]


class BulkItemOut(_Answer):
    """One job of POST /v1/jobs:batch, at its place in the request: its id, or why it was refused."""

    index: int = Field(description="Its place in `jobs`, from 0")
    status: Literal["queued", "duplicate", "rejected"]
    id: str | None = Field(
        default=None, description="queued: the job's id; duplicate: the job holding its unique key (none enqueued)"
    )
    request: str | None = Field(default=None, description="queued with an idempotency_key: its fingerprint")
    error: str | None = Field(
        default=None,
        description="rejected: invalid_request, payload_too_large, quota_exceeded, forbidden or unavailable "
        "(as the error codes of a single POST /v1/jobs)",
    )
    message: str | None = Field(default=None, description="rejected: why")
    field: str | None = Field(default=None, description="rejected for a field: which, e.g. jobs[3].payload")
    quota: str | None = Field(default=None, description="quota_exceeded or forbidden: the quota's name")


class BulkOut(_Answer):
    accepted: int
    rejected: int
    results: list[BulkItemOut] = Field(description="One per job, in the order given")


class ConcurrencyOut(_Answer):
    key: str
    limit: int


class ParentOut(_Answer):
    kind: Literal["job", "batch"]
    id: str = Field(description="The parent job's or batch's id")
    callback: str = Field(description="Which of its callbacks this job is: on_success, on_failure, on_complete")


class StepOut(_Answer):
    id: str = Field(description="The step id the job's code gave it")
    kind: Literal["step", "sleep", "wait_for_event", "create_token", "wait_for_token", "run_job", "run_jobs"]
    status: Literal["succeeded", "failed", "errored", "waiting", "timed_out", "cancelled"]
    attempts: int
    started_at: float | None
    finished_at: float | None


class EventOut(_Answer):
    id: str = Field(description="The event's id: the one sent, or a fresh one")


class TokenCompletedOut(_Answer):
    id: str
    status: Literal["completed"]


class StartedByOut(_Answer):
    trigger: str = Field(description="The trigger's name (GET /v1/triggers/{name})")
    event: str = Field(description="The id of the event that started the job")


class JobOut(_Answer):
    """A job. GET /v1/jobs's items leave out `result` and `payload`; the optional fields appear when they apply."""

    id: str
    type: str | None = Field(description="null: a job no worker has seen yet (its record is not written)")
    status: Status
    attempts: int = Field(description="Attempts started so far")
    error: str | None = Field(description="The last attempt's error")
    enqueued_at: float | None = Field(description="Epoch seconds")
    started_at: float | None = Field(description="Epoch seconds: its latest attempt's start")
    finished_at: float | None = Field(description="Epoch seconds")
    max_attempts: int | None
    result: Any = Field(default=None, description="What the job returned (GET /v1/jobs/{id} only)")
    payload: Any = Field(
        default=None,
        description="GET /v1/jobs/{id}, once a worker has seen the job; an http job's header values redacted",
    )
    timeout_seconds: int | None = None
    schedule: str | None = Field(default=None, description="A schedule's run: the schedule's name")
    scheduled_for: str | None = Field(default=None, description="A schedule's run: its firing time (ISO 8601)")
    trigger: Trigger | None = Field(default=None, description="A schedule's run: what started it")
    reason: str | None = Field(
        default=None,
        description="A skipped job: why it did not run (a schedule's overlapping run; a debounced job: the job that "
        "superseded it)",
    )
    cancelled_at: float | None = Field(default=None, description="Epoch seconds")
    retries: int | None = Field(default=None, description="Times POST /v1/jobs/{id}/retry started it over")
    concurrency: ConcurrencyOut | None = None
    batch: str | None = Field(default=None, description="The batch it belongs to")
    parent: ParentOut | None = Field(default=None, description="A callback's: the job or batch it follows")
    started_by: StartedByOut | None = Field(
        default=None, description="A job an event trigger started: the trigger and the event's id"
    )
    callbacks: dict[str, str | None] | None = Field(
        default=None, description="Its callbacks: on_success/on_failure -> the callback job's id once enqueued"
    )
    request: str | None = Field(
        default=None, description="A keyed job: the fingerprint of the request that runs under the key"
    )
    priority: Literal["high", "low"] | None = Field(
        default=None, description="Its lane, once a worker has seen it; absent: `default`"
    )
    waiting_for: dict[str, Any] | None = Field(
        default=None,
        description="A waiting durable job: what it waits for, {kind: sleep|event|token|job, step, ...} "
        "(until, the event's name and match, the token, timeout_at); a queued job waiting for its throttle's turn "
        "or its debounce group: {kind: throttle|debounce, key, until?} (epoch seconds)",
    )
    steps: list[StepOut] | None = Field(default=None, description="A durable job's steps, in the order they first ran")


class JobPageOut(_Answer):
    jobs: list[JobOut] = Field(description="Newest first, without result and payload")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null: that was the last")
    note: str = Field(description="What the listing cannot show")


class SkippedRetryOut(_Answer):
    id: str
    reason: str


class RetriedOut(_Answer):
    retried: int
    ids: list[str] = Field(description="The jobs queued again")
    more: bool = Field(description="Dead jobs matching the filter may remain: call again")
    skipped: list[SkippedRetryOut] = Field(description="Dead jobs found but not queued, and why")


class MinuteOut(_Answer):
    minute: str = Field(description="The minute's start (ISO 8601)")
    enqueued: int
    succeeded: int
    failed: int = Field(description="Jobs now waiting for a retry, by the start of their failed attempt")
    dead: int


class PercentilesOut(_Answer):
    p50: float | None
    p99: float | None
    count: int


class StatsOut(_Answer):
    window_seconds: int
    counts: dict[str, int] = Field(description="Jobs enqueued in the window, by status")
    per_minute: list[MinuteOut] = Field(description="The last hour, oldest first")
    enqueue_to_run_ms: PercentilesOut = Field(description="First attempt's start minus enqueued_at")
    records_read: int
    sampled: bool = Field(description="More records exist than were read: the figures are of the newest")
    source: str = Field(description="Exactly what was read")


# --- batches ---


class BatchCreatedOut(_Answer):
    id: str
    status: Literal["running"]
    total: int = Field(description="Its jobs")


class BatchOut(_Answer):
    """A batch and its counts (also what a batch callback's payload carries as `batch`)."""

    id: str
    status: Literal["running", "succeeded", "completed_with_failures", "cancelled"]
    total: int
    pending: int
    succeeded: int
    dead: int
    cancelled: int
    skipped: int = Field(
        description="Jobs that ended without running: a later job of their debounce key ran in their place, or "
        "their unique key's holder did their work; ended, and no failure"
    )
    created_at: float = Field(description="Epoch seconds")
    finished_at: float | None = Field(description="Epoch seconds, once no job is pending")
    callbacks: dict[str, str | None] = Field(
        description="on_complete/on_success -> the callback job's id once due, null until then"
    )
    description: str | None = None
    cancelled_at: float | None = Field(default=None, description="Epoch seconds")


class BatchPageOut(_Answer):
    batches: list[BatchOut] = Field(description="Newest first")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null: that was the last")


class BatchJobsOut(_Answer):
    jobs: list[str] = Field(description="Its jobs' ids, in the order they were given")


# --- schedules ---


class ScheduleJobOut(_Answer):
    type: str
    payload: Any = None
    max_attempts: int
    timeout_seconds: int | None = None
    throttle: dict[str, Any] | None = Field(default=None, description="Its runs' own throttle, as given")
    debounce: dict[str, Any] | None = Field(default=None, description="Its runs' debounce, as given")
    unique: dict[str, Any] | None = Field(default=None, description="Its runs' unique key, as given")
    priority: Literal["high", "low"] | None = Field(default=None, description="Its runs' priority; null: default")


class ScheduleRunOut(_Answer):
    id: str = Field(description="The run's job id")
    status: Status
    scheduled_for: str
    trigger: Trigger
    reason: str | None = Field(default=None, description="skipped: why")


class ScheduleOut(_Answer):
    name: str
    expression: str
    timezone: str
    job: ScheduleJobOut
    flexible_window_minutes: int
    start: str | None
    end: str | None
    overlap: Overlap
    description: str | None
    state: Literal["enabled", "paused"]
    paused_at: str | None
    note: str | None = Field(description="Given at pause")
    firings_per_minute: float = Field(description="What it holds of the tenant's max_firings_per_minute")
    created_at: str
    updated_at: str | None
    next_firings: list[str] | None = Field(
        default=None, description="GET and a PATCH dry run: its next firing times (null: they cannot be listed)"
    )
    runs: list[ScheduleRunOut] | None = Field(default=None, description="GET: its recent runs, newest first")


class SchedulePageOut(_Answer):
    schedules: list[ScheduleOut] = Field(description="By name")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null: that was the last")


class SkippedRunOut(_Answer):
    id: str
    status: Literal["skipped"]
    reason: str


class ScheduleDeletedOut(_Answer):
    name: str
    deleted: Literal[True]


class BackfilledRunOut(_Answer):
    id: str
    scheduled_for: str


class BackfillOut(_Answer):
    runs: list[BackfilledRunOut] = Field(description="One per firing time, oldest first")


# --- triggers ---


class TriggerOut(_Answer):
    name: str
    event: str = Field(description="The event name it starts a job on")
    match: dict[str, Any] | None = Field(description="What the event's data must hold (null: any event of the name)")
    job: dict[str, Any] = Field(description="The job it starts, as given: a POST /v1/jobs body")
    created_at: float = Field(description="Epoch seconds")


class TriggerPageOut(_Answer):
    triggers: list[TriggerOut] = Field(description="By name")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null: that was the last")


class TriggerDeletedOut(_Answer):
    name: str
    deleted: Literal[True]


# --- signing secrets ---


class SigningSecretOut(_Answer):
    id: str
    secret: str
    created_at: float = Field(description="Epoch seconds")
    expires_at: float | None = Field(description="Rotated out: valid until then (epoch seconds)")
    destination: str | None = Field(description="The origin it alone signs for; null: every other request")
    standard_webhooks_secret: str | None = Field(description="The secret as a Standard Webhooks library takes it")
    signs_from: float = Field(description="From when every request of its set carries its signature (epoch seconds)")


class SigningSecretsOut(_Answer):
    secrets: list[SigningSecretOut] = Field(description="Newest first")


# --- operator ---


class QueueOut(_Answer):
    name: str
    depth: int
    in_flight: int
    delayed: int
    oldest_age_seconds: float | None


class WorkersOut(_Answer):
    function: str
    max_concurrency: int
    concurrent_executions: float | None
    errors: float | None
    throttles: float | None
    invocations: float | None


class QueuesOut(_Answer):
    queue: QueueOut
    dlq: QueueOut
    workers: WorkersOut
    metrics_window_seconds: int
    metrics_note: str = Field(description="Where the metrics come from, and which have no datapoints yet")
    at: str = Field(description="When it was read (ISO 8601)")
