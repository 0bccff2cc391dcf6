"""The shapes the API answers with, as typed dicts (plain dicts at run time, so `job["status"]` works)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from .errors import CorralError

Status = Literal["queued", "running", "waiting", "succeeded", "failed", "dead", "cancelled", "skipped"]
FINISHED: tuple[str, ...] = ("succeeded", "dead", "cancelled", "skipped")


class Job(TypedDict):
    """GET /v1/jobs/{id}; list items leave out `result` and `payload`."""

    id: str
    type: str | None
    status: Status
    attempts: int
    error: str | None
    enqueued_at: float | None
    started_at: float | None
    finished_at: float | None
    result: NotRequired[Any]
    payload: NotRequired[Any]
    max_attempts: NotRequired[int | None]
    timeout_seconds: NotRequired[int]
    schedule: NotRequired[str]
    scheduled_for: NotRequired[str]
    trigger: NotRequired[Literal["schedule", "manual", "backfill"]]  # a schedule's run: what started it
    reason: NotRequired[str]  # a skipped run: why it did not run
    cancelled_at: NotRequired[float]
    retries: NotRequired[int]
    concurrency: NotRequired[Concurrency]
    batch: NotRequired[str]  # the batch it belongs to
    parent: NotRequired[dict[str, str]]  # a callback's: {"kind": "job" | "batch", "id", "callback"}
    started_by: NotRequired[dict[str, str]]  # a trigger's job: {"trigger": its name, "event": the event's id}
    callbacks: NotRequired[dict[str, str | None]]  # its callbacks: kind -> the callback job's id once enqueued
    waiting_for: NotRequired[dict[str, Any]]  # a waiting durable job's wait: {"kind", "step", ...}
    steps: NotRequired[list[Step]]  # a durable job's steps, in the order they first ran


class Step(TypedDict):
    """One step of a durable job (`context.step`, `sleep`, `wait_for_event`, ...), as its view shows it."""

    id: str
    kind: Literal["step", "sleep", "wait_for_event", "create_token", "wait_for_token", "run_job", "run_jobs"]
    status: Literal["succeeded", "failed", "errored", "waiting", "timed_out", "cancelled"]
    attempts: int
    started_at: float | None
    finished_at: float | None


class TokenCompleted(TypedDict):
    """POST /v1/tokens/{id}:complete."""

    id: str
    status: Literal["completed"]


class Concurrency(TypedDict):
    """At most `limit` of the tenant's jobs with this `key` run at once; the others wait."""

    key: str
    limit: int


class Unique(TypedDict, total=False):
    """While the tenant's job with `key` waits (`until` "started") or until it ends ("finished"), at most
    `for_seconds`, enqueuing another job with the key answers that job's id, `duplicate`, and enqueues nothing."""

    key: str
    until: Literal["started", "finished"]
    for_seconds: int


class Throttle(TypedDict):
    """At most `limit` of the tenant's jobs with this `key` start in any window of `period_seconds` (1 to 86,400);
    the others wait, using no attempt, and start in enqueue order as the windows allow."""

    key: str
    limit: int
    period_seconds: int


# Debounce ---------------------------------------------------------------------------------------------


class _DebounceRequired(TypedDict):
    key: str
    period_seconds: int


class Debounce(_DebounceRequired, total=False):
    """The tenant's jobs with this `key` arriving within `period_seconds` (1 to 86,400) of each other run once,
    `period_seconds` after the last, with the last one's payload; `max_wait_seconds` (at least `period_seconds`, at
    most 604,800) caps how long a stream of arrivals puts the run off. Each other job ends `skipped`, its `reason`
    naming the job that ran. Not with delay_seconds or run_at."""

    max_wait_seconds: int


class Callback(TypedDict, total=False):
    """A job enqueued when another ends (on_success, on_failure) or a batch does (on_complete, on_success):
    its payload, an object, gets `parent` (the finished job's view, without its payload unless
    `include_parent_payload`) or `batch` (the batch's). A callback has no callbacks of its own: the API
    refuses any field not listed here."""

    type: str
    payload: dict[str, Any] | None
    max_attempts: int
    timeout_seconds: int
    concurrency: Concurrency
    include_parent_payload: bool  # a job's callbacks only; an http parent's header values are redacted anyway


Priority = Literal["high", "default", "low"]


class JobSpec(TypedDict, total=False):
    """One job to enqueue (the body of POST /v1/jobs)."""

    type: str
    payload: Any
    idempotency_key: str
    delay_seconds: int
    run_at: str
    max_attempts: int
    timeout_seconds: int
    concurrency: Concurrency
    unique: Unique
    throttle: Throttle
    debounce: Debounce
    priority: Priority  # its lane: a high job waits only behind high jobs (default: its type's, else "default")


BatchStatus = Literal["running", "succeeded", "completed_with_failures", "cancelled"]
BATCH_FINISHED: tuple[str, ...] = ("succeeded", "completed_with_failures", "cancelled")


class Batch(TypedDict):
    """GET /v1/batches/{id}: its counts, and its callbacks' job ids once enqueued (null until then)."""

    id: str
    status: BatchStatus
    total: int
    pending: int
    succeeded: int
    dead: int
    cancelled: int
    skipped: int  # ended without running: a debounce's later job, or a unique key's holder, did their work
    created_at: float
    finished_at: float | None
    callbacks: dict[str, str | None]
    description: NotRequired[str]
    cancelled_at: NotRequired[float]


@dataclass(frozen=True)
class BatchPage:
    """One page of GET /v1/batches, newest first."""

    batches: list[Batch]
    next_cursor: str | None

    @classmethod
    def read(cls, answer: dict[str, Any]) -> BatchPage:
        return cls(answer["batches"], answer.get("next_cursor"))


class Accepted(TypedDict):
    id: str
    status: Status | Literal["duplicate"]  # duplicate: the job holding its unique key; nothing was enqueued


class RetriedMany(TypedDict):
    retried: int
    ids: list[str]
    more: bool


class Percentiles(TypedDict):
    p50: float | None
    p99: float | None
    count: int


class Stats(TypedDict):
    window_seconds: int
    counts: dict[str, int]
    per_minute: list[dict[str, Any]]
    enqueue_to_run_ms: Percentiles
    source: str


class Schedule(TypedDict, total=False):
    name: str
    expression: str
    timezone: str
    job: dict[str, Any]
    flexible_window_minutes: int
    start: str | None
    end: str | None
    overlap: Literal["allow", "skip"]
    description: str | None
    state: Literal["enabled", "paused"]
    paused_at: str | None
    note: str | None  # given at pause
    firings_per_minute: float  # what it holds of the tenant's max_firings_per_minute
    created_at: str
    updated_at: str | None
    next_firings: list[str] | None
    runs: list[ScheduleRun]


class ScheduleRun(TypedDict):
    """One of a schedule's runs (GET /v1/schedules/{name}), newest first."""

    id: str
    status: Status
    scheduled_for: str
    trigger: Literal["schedule", "manual", "backfill"]
    reason: NotRequired[str]  # skipped: why


class Triggered(TypedDict):
    """POST /v1/schedules/{name}:trigger: its run, queued or skipped (`reason`: why)."""

    id: str
    status: Literal["queued", "skipped"]
    reason: NotRequired[str]


@dataclass(frozen=True)
class SchedulePage:
    """One page of GET /v1/schedules, by name."""

    schedules: list[Schedule]
    next_cursor: str | None

    @classmethod
    def read(cls, answer: dict[str, Any]) -> SchedulePage:
        return cls(answer["schedules"], answer.get("next_cursor"))


class Trigger(TypedDict):
    """An event trigger (POST /v1/triggers): each event `event` whose data holds `match` starts `job`."""

    name: str
    event: str
    match: dict[str, Any] | None
    job: dict[str, Any]  # a POST /v1/jobs body
    created_at: float


@dataclass(frozen=True)
class TriggerPage:
    """One page of GET /v1/triggers, by name."""

    triggers: list[Trigger]
    next_cursor: str | None

    @classmethod
    def read(cls, answer: dict[str, Any]) -> TriggerPage:
        return cls(answer["triggers"], answer.get("next_cursor"))


@dataclass(frozen=True)
class JobPage:
    """One page of GET /v1/jobs. `note` says what the listing cannot show (jobs no worker has seen yet)."""

    jobs: list[Job]
    next_cursor: str | None
    note: str = ""

    @classmethod
    def read(cls, answer: dict[str, Any]) -> JobPage:
        return cls(answer["jobs"], answer.get("next_cursor"), answer.get("note", ""))


@dataclass(frozen=True)
class EnqueueOutcome:
    """One job of `enqueue_many`, in the order given: its id, or the error that refused it."""

    index: int
    id: str | None
    error: CorralError | None = None
    duplicate: bool = False  # `id` is the job holding its unique key: nothing was enqueued

    @property
    def ok(self) -> bool:
        return self.error is None


__all__ = [
    "BATCH_FINISHED",
    "FINISHED",
    "Accepted",
    "Batch",
    "BatchPage",
    "Callback",
    "Concurrency",
    "EnqueueOutcome",
    "Job",
    "JobPage",
    "JobSpec",
    "RetriedMany",
    "Schedule",
    "SchedulePage",
    "ScheduleRun",
    "Stats",
    "Step",
    "TokenCompleted",
    "Trigger",
    "TriggerPage",
    "Triggered",
]
