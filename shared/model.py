"""A job as it travels (the queue message) and as it is recorded (the store item)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from shared import ids, settings
from shared.errors import CorralError


class Status(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # will retry
    DEAD = "dead"  # gave up; its message is in the DLQ
    CANCELLED = "cancelled"  # cancelled before it ran; a delivery of it is acknowledged, never run
    # A schedule's run not started because its previous run was still live (overlap "skip"); it cost no
    # attempt, and a delivery of it is acknowledged unrun (docs/decisions/schedule-overlap.md).
    SKIPPED = "skipped"
    # A durable job that sleeps or waits (an event, a token, a child): it holds no worker, slot or attempt
    # until a wake message claims it (docs/decisions/durable-jobs.md "Waiting"). Not finished.
    WAITING = "waiting"

    @property
    def finished(self) -> bool:
        return self in (Status.SUCCEEDED, Status.DEAD, Status.CANCELLED, Status.SKIPPED)


class Overlap(StrEnum):
    """What a schedule's run does while an earlier run of that schedule is still queued, running or failed."""

    ALLOW = "allow"  # it runs anyway (the default)
    SKIP = "skip"  # it is recorded `skipped` instead of running


class Trigger(StrEnum):
    """What started a schedule's run (its record and message say so; none: the schedule's own firing)."""

    SCHEDULE = "schedule"  # a firing of the schedule (never written: it is what no `trigger` means)
    MANUAL = "manual"  # POST /v1/schedules/{name}:trigger
    BACKFILL = "backfill"  # POST /v1/schedules/{name}:backfill


class Outcome(StrEnum):
    """What the worker did with one delivery of a queue message."""

    SUCCEEDED = "succeeded"
    DEAD = "dead"
    DUPLICATE = "duplicate"  # the job is finished, or another message of it holds it
    LOST_CLAIM = "lost-claim"  # the attempt's lease was taken over before it recorded its outcome
    UNREADABLE = "unreadable"  # the message cannot run: in the DLQ with its reason
    RETRY_SENT = "retry-sent"  # failed while the store was down: an outcome message carries it and the retry
    # An outcome an earlier run carried in a message (a store blip's), now recorded: that run was counted
    # when it ended, so the record is not counted as a second success or death.
    RECORDED_LATE = "recorded-late"
    # A job waiting its turn near the queue's receive budget: sent again as a fresh message, carrying its
    # wait, and this one acknowledged (shared/worker/waiting.py).
    RESENT = "resent"
    # A message found in the backstop with no outcome recorded: its job recorded `dead`, the message buried
    # in the DLQ (shared/worker/backstop.py).
    DEAD_LETTERED = "dead-lettered"
    # A durable job's attempt stopped at a sleep or a wait: recorded `waiting`, its message acknowledged.
    SUSPENDED = "suspended"


class UnreadableMessage(CorralError, ValueError):
    """A queue message that cannot run, and why.

    `job` holds the fields read so far of a message whose id verified for its tenant (at least
    `id` and `tenant`): such a job is recorded `dead` with the reason, so GET tells the truth.
    None: nothing trustworthy to record (not JSON, no tenant, an id that does not verify).
    """

    def __init__(self, reason: str, job: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.job = job


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_between(low: int, high: int) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if _is_int(value) and low <= value <= high else f"must be an integer from {low} to {high}"

    return check


def _text(max_length: int) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        ok = isinstance(value, str) and 0 < len(value) <= max_length and _encodable(value)
        return None if ok else f"must be a non-empty string of at most {max_length} characters"

    return check


def _encodable(text: str) -> bool:
    """JSON can carry lone surrogates ("\\ud800") that no store or HMAC can take as text."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _optional(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    return lambda value: None if value is None else check(value)


_LAST_TIMESTAMP = 10**11  # epoch seconds in the year 5138: numbers the store and the listing index can hold


def _timestamp(value: Any) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 1 <= value < _LAST_TIMESTAMP
    return None if ok else "must be a positive number (epoch seconds)"


def _payload(value: Any) -> str | None:
    size = len(json.dumps(value, separators=(",", ":")).encode())
    limit = settings.MAX_PAYLOAD_BYTES
    return None if size <= limit else f"is {size} bytes serialised, over the limit of {limit} bytes"


def _one_of(*allowed: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in allowed else f"must be one of {', '.join(allowed)}"

    return check


def _version(value: Any) -> str | None:
    return None if _is_int(value) and value == 1 else "must be 1"


@dataclass(frozen=True)
class Concurrency:
    """At most `limit` of a tenant's jobs with this `key` run at once (docs/decisions/concurrency-keys.md)."""

    key: str
    limit: int

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "limit": self.limit}

    @classmethod
    def of(cls, value: Any) -> Concurrency | None:
        """A message's `concurrency` field, checked already (`_concurrency`)."""
        return None if value is None else cls(key=value["key"], limit=value["limit"])


def _concurrency(value: Any) -> str | None:
    if value is None:
        return None
    key_ok = isinstance(value, dict) and _text(settings.MAX_CONCURRENCY_KEY_CHARS)(value.get("key")) is None
    limit_ok = isinstance(value, dict) and _int_between(1, settings.MAX_CONCURRENCY_LIMIT)(value.get("limit")) is None
    if key_ok and limit_ok and set(value) == {"key", "limit"}:
        return None
    return (
        f'must be {{"key": a string of 1 to {settings.MAX_CONCURRENCY_KEY_CHARS} characters, '
        f'"limit": 1 to {settings.MAX_CONCURRENCY_LIMIT}}}'
    )


@dataclass(frozen=True)
class BatchMember:
    """A job's place in its batch (docs/decisions/batches.md): the batch's id, the job's index in it, and
    which run of the job this is (its record's `retries`: a retried job is counted again, as a new run)."""

    id: str
    index: int
    generation: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "index": self.index} | ({"generation": self.generation} if self.generation else {})

    @classmethod
    def of(cls, value: Any) -> BatchMember | None:
        """A message's `batch` field, checked already (`_batch_member`)."""
        return None if value is None else cls(value["id"], value["index"], value.get("generation", 0))


def _batch_member(value: Any) -> str | None:
    shape = f'must be {{"id": a batch id, "index": 0 to {settings.MAX_BATCH_SIZE - 1}, "generation"?: 0 or more}}'
    if value is None:
        return None
    if not isinstance(value, dict) or not {"id", "index"} <= set(value) <= {"id", "index", "generation"}:
        return shape
    checks = (
        _text(_MAX_NAME_LENGTH)(value["id"]),
        _int_between(0, settings.MAX_BATCH_SIZE - 1)(value["index"]),
        _int_between(0, 10**6)(value.get("generation", 0)),
    )
    return shape if any(checks) else None


CALLBACK_KINDS = ("on_success", "on_failure")  # a job's own callbacks; a batch's: BATCH_CALLBACK_KINDS
BATCH_CALLBACK_KINDS = ("on_complete", "on_success")
# `include_parent_payload`: a job's callback asks for its parent's payload in the parent's view.
_CALLBACK_SPEC_FIELDS = {"type", "payload", "max_attempts", "timeout_seconds", "concurrency", "include_parent_payload"}


def _callbacks(value: Any) -> str | None:
    """A job's callbacks: {"on_success"?, "on_failure"?} each a job spec (type, payload, max_attempts...)."""
    if value is None:
        return None
    shape = 'must be {"on_success"?: a job, "on_failure"?: a job}, each with its type and max_attempts'
    if not isinstance(value, dict) or not value or not set(value) <= set(CALLBACK_KINDS):
        return shape
    for spec in value.values():
        if not isinstance(spec, dict) or not {"type", "max_attempts"} <= set(spec) <= _CALLBACK_SPEC_FIELDS:
            return shape
        if _text(_MAX_NAME_LENGTH)(spec["type"]) or _int_between(1, settings.MAX_MAX_ATTEMPTS)(spec["max_attempts"]):
            return shape
        if _concurrency(spec.get("concurrency")) or spec.get("include_parent_payload", True) is not True:
            return shape
    return _payload(value)  # both callbacks' payloads together within a payload's limit (the record keeps them)


_PARENT_KINDS = {"job": CALLBACK_KINDS, "batch": BATCH_CALLBACK_KINDS}


def _parent(value: Any) -> str | None:
    """A callback's parent: {"kind": "job" | "batch", "id", "callback": which of its callbacks this job is}."""
    if value is None:
        return None
    ok = (
        isinstance(value, dict)
        and set(value) == {"kind", "id", "callback"}
        and value["kind"] in _PARENT_KINDS
        and value["callback"] in _PARENT_KINDS[value["kind"]]
        and _text(_MAX_NAME_LENGTH)(value["id"]) is None
    )
    return None if ok else 'must be {"kind": "job" or "batch", "id", "callback": the callback it is}'


_MAX_NAME_LENGTH = 256  # tenants, job types, schedule names, timestamps: far above any real one
# Every field a job message may carry, and what it must be. `id`/`tenant` are checked first, apart.
_FIELD_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "v": _version,
    "type": _text(_MAX_NAME_LENGTH),
    "payload": _payload,
    "max_attempts": _int_between(1, settings.MAX_MAX_ATTEMPTS),
    "enqueued_at": _timestamp,
    "schedule": _optional(_text(_MAX_NAME_LENGTH)),
    "scheduled_for": _optional(_text(_MAX_NAME_LENGTH)),
    "timeout_seconds": _optional(_int_between(1, settings.MAX_JOB_TIMEOUT_SECONDS)),
    "due_at": _optional(_timestamp),
    "concurrency": _concurrency,
    "batch": _batch_member,
    "callbacks": _callbacks,
    "parent": _parent,
    "overlap": _optional(_one_of(*Overlap)),
    "trigger": _optional(_one_of(Trigger.MANUAL, Trigger.BACKFILL)),
    "request": _optional(_text(_MAX_NAME_LENGTH)),
}
_REQUIRED = ("type", "max_attempts", "enqueued_at")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_object(body: str) -> dict[str, Any]:
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        raise UnreadableMessage(f"unreadable job message: not JSON ({type(error).__name__})") from None
    if not isinstance(data, dict):
        raise UnreadableMessage(f"unreadable job message: a JSON {type(data).__name__}, not an object")
    return data


@dataclass(frozen=True)
class JobSpec:
    """What a job is, whenever and however it is enqueued: now, later, or by each firing of a schedule."""

    type: str
    payload: Any = None
    max_attempts: int | None = None  # None: the job type's default
    timeout_seconds: int | None = None  # each attempt's; None: the job type's default


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
    # Set only on a far-future job's message (it waited as a one-time schedule, holding a quota unit
    # that its arrival gives back: shared/jobs/far_future.py); epoch seconds.
    due_at: float | None = None
    # The job's own concurrency key; None: its type's, if the type declares one (shared/jobs/concurrency.py).
    concurrency: Concurrency | None = None
    batch: BatchMember | None = None  # the batch it belongs to (shared/jobs/batches.py)
    # Jobs to enqueue when it ends: {"on_success"?, "on_failure"?: a job spec as a dict} (shared/jobs/callbacks.py).
    callbacks: dict[str, Any] | None = None
    # Set on a callback: {"kind": "job" | "batch", "id": the parent's, "callback": which callback it is}.
    parent: dict[str, str] | None = None
    # A schedule's run only: "skip" when the schedule skips overlapping runs (the claim checks for a live
    # earlier run first: shared/store/schedule_runs.py); what started it, when not the schedule's firing.
    overlap: str | None = None
    trigger: str | None = None
    # A keyed job's request fingerprint (shared/ids.py request_fingerprint): of the requests sent under one
    # idempotency key, the first claimed is the job's, and only its messages run (shared/store/job_store.py).
    request: str | None = None
    v: int = 1

    @classmethod
    def of(
        cls,
        spec: JobSpec,
        *,
        job_id: str,
        tenant: str,
        enqueued_at: float,
        schedule: str | None = None,
        scheduled_for: str | None = None,
        concurrency: Concurrency | None = None,
        batch: BatchMember | None = None,
        callbacks: dict[str, Any] | None = None,
        parent: dict[str, str] | None = None,
        overlap: Overlap = Overlap.ALLOW,
        trigger: Trigger = Trigger.SCHEDULE,
        request: str | None = None,
    ) -> JobMessage:
        """The message of a job spec whose max_attempts is decided (a message always carries one).

        `overlap` and `trigger` (a schedule's runs) are carried only when they differ from the defaults."""
        if spec.max_attempts is None:
            raise ValueError(f"the {spec.type!r} job's max_attempts is not decided: a message carries one")
        return cls(
            id=job_id,
            tenant=tenant,
            type=spec.type,
            payload=spec.payload,
            max_attempts=spec.max_attempts,
            enqueued_at=enqueued_at,
            schedule=schedule,
            scheduled_for=scheduled_for,
            timeout_seconds=spec.timeout_seconds,
            concurrency=concurrency,
            batch=batch,
            callbacks=callbacks,
            parent=parent,
            overlap=str(overlap) if overlap is not Overlap.ALLOW else None,
            trigger=str(trigger) if trigger is not Trigger.SCHEDULE else None,
            request=request,
        )

    @classmethod
    def firing_template(cls, tenant: str, schedule: str, spec: JobSpec, overlap: Overlap = Overlap.ALLOW) -> str:
        """The target Input of a recurring schedule: the message of its job, without what each firing fills in.

        No `id` or `enqueued_at` (`from_data` derives them at each firing), and Scheduler's placeholder
        for `scheduled_for`. No timeout_seconds when the spec has none: each run gets its type's default.
        `overlap` travels in the Input, so the worker knows at each firing without reading the schedule.
        """
        message = cls.of(
            spec,
            job_id="",
            tenant=tenant,
            enqueued_at=0,
            schedule=schedule,
            scheduled_for=SCHEDULED_TIME,
            overlap=overlap,
        )
        fields = {name: value for name, value in message.to_dict().items() if name not in _FILLED_AT_EACH_FIRING}
        return json.dumps(fields, separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        """The body's fields. `payload` is always there (null too); optional fields only when set."""
        body: dict[str, Any] = {
            "v": self.v,
            "id": self.id,
            "tenant": self.tenant,
            "type": self.type,
            "payload": self.payload,
            "max_attempts": self.max_attempts,
            "enqueued_at": self.enqueued_at,
        }
        optional = {
            "schedule": self.schedule,
            "scheduled_for": self.scheduled_for,
            "timeout_seconds": self.timeout_seconds,
            "due_at": self.due_at,
            "concurrency": self.concurrency.to_dict() if self.concurrency else None,
            "batch": self.batch.to_dict() if self.batch else None,
            "callbacks": self.callbacks,
            "parent": self.parent,
            "overlap": self.overlap,
            "trigger": self.trigger,
            "request": self.request,
        }
        return body | {name: value for name, value in optional.items() if value is not None}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def in_run(self, retries: int) -> JobMessage:
        """The message as its record's run `retries` of the job (its record's count of retries): a batch
        member's end counts in that run (shared/store/batch_items.py)."""
        if self.batch is None or self.batch.generation == retries:
            return self
        return dataclasses.replace(self, batch=dataclasses.replace(self.batch, generation=retries))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobMessage:
        """A message of fields written by `to_dict` (a schedule's input, a record's), unchecked."""
        known = {f for f in cls.__dataclass_fields__}
        return cls(**_typed({k: v for k, v in data.items() if k in known}))

    @classmethod
    def from_body(cls, body: str, *, sent_at: float, secret: bytes) -> JobMessage:
        """The job a queue message carries, checked field by field; UnreadableMessage says why not.

        `sent_at`: when the message entered the queue (SQS SentTimestamp). A message without
        an id is a schedule's firing (`firing_template`, above): its id is derived from (tenant,
        schedule, scheduled time), and its enqueued_at is when Scheduler put it in the queue,
        not its scheduled time: enqueue-to-run then measures our platform, and Scheduler's
        own lateness shows as enqueued_at - scheduled_for.
        """
        return cls.from_data(_json_object(body), sent_at=sent_at, secret=secret)

    @classmethod
    def from_data(cls, data: dict[str, Any], *, sent_at: float, secret: bytes) -> JobMessage:
        """`from_body` on a parsed JSON object."""
        tenant = data.get("tenant")
        if _text(_MAX_NAME_LENGTH)(tenant) is not None:
            raise UnreadableMessage("unreadable job message: field 'tenant' must be a non-empty string")
        if "id" in data:
            job_id = data["id"]
            if not isinstance(job_id, str) or ids.verify(secret, tenant, job_id) is None:
                raise UnreadableMessage(f"forged job message: its id does not verify for tenant {tenant!r}")
        else:
            schedule = data.get("schedule")
            if _text(_MAX_NAME_LENGTH)(schedule) is not None:
                raise UnreadableMessage("unreadable job message: no id, and no schedule to derive one from")
            scheduled_for = scheduled_time(data.get("scheduled_for"), sent_at)
            job_id = ids.scheduled_id(secret, tenant, schedule, scheduled_for)
            data = {**data, "scheduled_for": scheduled_for, "enqueued_at": sent_at}
        fields = {name: value for name, value in data.items() if name not in ("id", "tenant")}
        problems = [f"unknown field {name!r}" for name in fields if name not in _FIELD_CHECKS]
        problems += [f"missing field {name!r}" for name in _REQUIRED if name not in fields]
        valid: dict[str, Any] = {"id": job_id, "tenant": tenant}
        for name, value in fields.items():
            try:
                problem = _FIELD_CHECKS[name](value) if name in _FIELD_CHECKS else None
            except (ValueError, TypeError, RecursionError) as error:  # a payload json cannot write back
                problem = f"cannot be serialised ({type(error).__name__})"
            if problem:
                problems.append(f"field {name!r} {problem}")
            elif name in _FIELD_CHECKS:
                valid[name] = value
        if forged := _forged_lineage(secret, tenant, job_id, valid):
            # Recorded dead without them: a forged batch or parent is never counted or named.
            valid = {name: value for name, value in valid.items() if name not in forged}
            problems += [f"field {name!r} is not this job's: its id is not derived from it" for name in forged]
        if problems:
            raise UnreadableMessage("unreadable job message: " + "; ".join(problems), job=valid)
        return cls(**_typed({"payload": None} | valid))  # no payload is a null payload, as the API accepts it


def _forged_lineage(secret: bytes, tenant: str, job_id: str, fields: dict[str, Any]) -> list[str]:
    """Which of `batch` and `parent` the message's id does not come from. A batch member's id is derived
    from its batch and index, a callback's from its parent and kind (`ids.child_id`), each batch and
    parent minted for the same tenant: so a field naming another tenant's batch, or another job, is
    forged, and the worker must not count the job in that batch (or name that parent)."""
    forged = []
    batch = fields.get("batch")
    if batch is not None and not (
        ids.verify_batch(secret, tenant, batch["id"])
        and ids.child_id(secret, tenant, batch["id"], str(batch["index"])) == job_id
    ):
        forged.append("batch")
    parent = fields.get("parent")
    if parent is not None:
        minted = (
            ids.verify_batch(secret, tenant, parent["id"])
            if parent["kind"] == "batch"
            else ids.verify(secret, tenant, parent["id"]) is not None
        )
        if not (minted and ids.child_id(secret, tenant, parent["id"], parent["callback"]) == job_id):
            forged.append("parent")
    return forged


def _typed(fields: dict[str, Any]) -> dict[str, Any]:
    """A message's fields as JobMessage holds them: its JSON objects as their values."""
    if "concurrency" in fields:
        fields = {**fields, "concurrency": Concurrency.of(fields["concurrency"])}
    if "batch" in fields:
        fields = {**fields, "batch": BatchMember.of(fields["batch"])}
    return fields


def result_json(result: Any) -> str:
    """A job's result as stored (what GET shows): JSON, anything else as its str()."""
    return json.dumps(result, default=str)


def result_problem(result: object) -> str | None:
    """Why a result cannot be stored, if it cannot: the store holds at most MAX_RESULT_BYTES of it.

    Checked where the job ran: by the worker, and by the jobs function before it answers (a result
    over Lambda's 6 MB response limit would otherwise come back as the function's own error).
    """
    try:
        size = len(result_json(result).encode())
    except (ValueError, TypeError, RecursionError) as error:
        return f"the job's result cannot be serialised as JSON ({type(error).__name__}: {error})"
    if size > settings.MAX_RESULT_BYTES:
        return f"the job's result is {size} bytes serialised, over the limit of {settings.MAX_RESULT_BYTES} bytes"
    return None


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
    # Its callbacks: kind -> the callback job's id once enqueued, None until then.
    callbacks: dict[str, str | None] | None = None
    trigger: str | None = None  # a schedule's run: "manual" or "backfill"; None: the schedule's own firing
    skip_reason: str | None = None  # a `skipped` run: why it did not run
    request: str | None = None  # a keyed job: the fingerprint of the request that runs (JobMessage.request)
    # A durable job's (docs/decisions/durable-jobs.md): what it waits for while `waiting`, whether it keeps a
    # journal, and its steps as the view shows them (read from the journal by whoever builds the view).
    waiting_for: dict[str, Any] | None = None
    journal: bool = False
    steps: list[dict[str, Any]] | None = None

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
        if self.callbacks is not None:
            view["callbacks"] = self.callbacks
        if self.request is not None:
            view["request"] = self.request
        if self.status is Status.WAITING and self.waiting_for is not None:
            view["waiting_for"] = self.waiting_for
        if self.steps is not None:
            view["steps"] = self.steps
        return view


OUTCOME_KIND = "outcome"
# What an attempt run without the store's claim may end as (shared/worker/unclaimed.py): `failed` carries
# the job's retry.
_CARRIED = (Status.SUCCEEDED, Status.FAILED, Status.DEAD)
_OUTCOME_FIELDS = frozenset(
    {"kind", "v", "job", "status", "started_at", "finished_at", "result", "error", "attempt_token"}
)


@dataclass(frozen=True)
class OutcomeMessage:
    """An attempt's outcome, carried on the jobs queue to the store: the attempt ran while the store
    failed, without a claim, and the store records it when a later delivery of this message can.

    `failed`: the attempt failed with attempts left; this message is then also the job's retry
    (sent with the retry's delay), run under a claim once its failure is recorded.
    """

    job: JobMessage
    status: Status
    started_at: float
    finished_at: float
    result: Any = None
    error: str | None = None
    # Set when the attempt ran under a claim and only its outcome write failed: the claim's token,
    # so the outcome is recorded as that attempt's (shared/store/job_store.py `complete`).
    attempt_token: str | None = None
    v: int = 1

    def to_json(self) -> str:
        body: dict[str, Any] = {
            "kind": OUTCOME_KIND,
            "v": self.v,
            "job": self.job.to_dict(),
            "status": str(self.status),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }
        if self.status is Status.SUCCEEDED:
            body["result"] = self.result
        else:
            body["error"] = self.error or ""
        if self.attempt_token is not None:
            body["attempt_token"] = self.attempt_token
        return json.dumps(body, separators=(",", ":"), default=str)

    @classmethod
    def from_data(cls, data: dict[str, Any], *, secret: bytes) -> OutcomeMessage:
        """The outcome a message carries, checked field by field; UnreadableMessage says why not.

        Strict: any unknown or missing field, or a job whose id does not verify, makes it unreadable
        (its job is not touched: nothing it carries can be trusted to name one)."""
        problems = [f"unknown field {name!r}" for name in sorted(set(data) - _OUTCOME_FIELDS)]
        status = data.get("status")
        if data.get("kind") != OUTCOME_KIND or data.get("v") != 1:
            problems.append("fields 'kind' and 'v' must be 'outcome' and 1")
        if status not in _CARRIED:
            problems.append(f"field 'status' must be one of {', '.join(_CARRIED)}")
        for name in ("started_at", "finished_at"):
            if (problem := _timestamp(data.get(name))) is not None:
                problems.append(f"field {name!r} {problem}")
        carried = "result" if status == Status.SUCCEEDED else "error"
        if status in _CARRIED and (carried not in data or ({"result", "error"} - {carried}) & set(data)):
            problems.append(f"a {status} outcome carries exactly one of 'result' and 'error': {carried!r}")
        if status in (Status.FAILED, Status.DEAD) and not isinstance(data.get("error"), str):
            problems.append("field 'error' must be a string")
        token = data.get("attempt_token")
        if token is not None and (status != Status.SUCCEEDED or _text(64)(token) is not None):
            problems.append("field 'attempt_token' must be a claim's token, on a succeeded outcome only")
        job = data.get("job")
        if not isinstance(job, dict) or "id" not in job:
            problems.append("field 'job' must be a job message with its id")
        if problems:
            raise UnreadableMessage("unreadable outcome message: " + "; ".join(problems))
        try:
            message = JobMessage.from_data(job, sent_at=0, secret=secret)
        except UnreadableMessage as unreadable:
            raise UnreadableMessage(f"unreadable outcome message: its job: {unreadable.reason}") from None
        return cls(
            job=message,
            status=Status(status),
            started_at=data["started_at"],
            finished_at=data["finished_at"],
            result=data.get("result"),
            error=data.get("error"),
            attempt_token=token,
        )


def read_message(body: str, *, sent_at: float, secret: bytes) -> JobMessage | OutcomeMessage:
    """What a jobs-queue message carries: a job (most), or an outcome on its way to the store."""
    data = _json_object(body)
    if data.get("kind") == OUTCOME_KIND:  # any other "kind" is a job message's unknown field
        return OutcomeMessage.from_data(data, secret=secret)
    return JobMessage.from_data(data, sent_at=sent_at, secret=secret)


# A schedule's firing, as EventBridge Scheduler puts it on the queue, turned into a job message.
# A schedule's target Input is a job message without an id (`JobMessage.firing_template`):
# Scheduler fills in `<aws.scheduler.scheduled-time>` at each firing, and the id is derived from
# (tenant, schedule, scheduled time), so a duplicate firing of one occurrence is
# the same job and the worker's claim runs it once (`JobMessage.from_body` derives it).

SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"  # a Scheduler context attribute, substituted at each firing
_FILLED_AT_EACH_FIRING = ("id", "enqueued_at")
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def format_scheduled_time(moment: datetime) -> str:
    """A run's scheduled time in its canonical form (UTC, whole seconds): what its id is derived from."""
    return moment.astimezone(UTC).strftime(_TIME_FORMAT)


def scheduled_time(value: Any, sent_at: float) -> str:
    """The occurrence a firing belongs to, in one canonical form (UTC, seconds)."""
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        # The placeholder arrived verbatim: Scheduler on AWS always substitutes it, the
        # embedded emulator (ministack 1.5.33) never does. Fall back to the minute the
        # firing was sent in: schedules fire at most once a minute, so locally each
        # occurrence still gets its own id.
        minute = int(sent_at // 60 * 60)
        return datetime.fromtimestamp(minute, UTC).strftime(_TIME_FORMAT)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return format_scheduled_time(parsed)


# An attempt's start ------------------------------------------------------------------------------------
# Given by the worker to the store with an attempt's outcome (shared/store/job_store.py records it).


@dataclass(frozen=True)
class Started:
    """When an attempt's code really started (its claim may have come earlier: a batch's jobs are claimed
    together, shared/worker/claim_ahead.py), and whether it was the job's first attempt."""

    at: float
    first_attempt: bool = False
