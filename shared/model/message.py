"""A job as it travels: the jobs queue's message (`JobMessage`), its batch membership (`BatchMember`), and
the wire validator that reads a message field by field (`JobMessage.from_body`) and says why one cannot run
(`UnreadableMessage`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared import ids, settings
from shared.errors import CorralError
from shared.flow import options as flow_options
from shared.flow.debounce import Debounce
from shared.flow.throttle import Throttle
from shared.model.firing import SCHEDULED_TIME, scheduled_time
from shared.model.lineage import STEP_PARENT, forged_lineage, step_parent_problem
from shared.model.spec import (
    BATCH_CALLBACK_KINDS,
    CALLBACK_KINDS,
    Callback,
    Concurrency,
    JobSpec,
    callbacks_of,
    callbacks_to_dict,
)
from shared.model.states import Overlap, Trigger


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


def text_check(max_length: int) -> Callable[[Any], str | None]:
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


def timestamp_check(value: Any) -> str | None:
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


def concurrency_problem(value: Any) -> str | None:
    if value is None:
        return None
    key_ok = isinstance(value, dict) and text_check(settings.MAX_CONCURRENCY_KEY_CHARS)(value.get("key")) is None
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
        text_check(_MAX_NAME_LENGTH)(value["id"]),
        _int_between(0, settings.MAX_BATCH_SIZE - 1)(value["index"]),
        _int_between(0, 10**6)(value.get("generation", 0)),
    )
    return shape if any(checks) else None


def _callbacks(value: Any) -> str | None:
    """A job's callbacks: {"on_success"?, "on_failure"?} each a job spec (type, payload, max_attempts...)."""
    if value is None:
        return None
    shape = 'must be {"on_success"?: a job, "on_failure"?: a job}, each with its type and max_attempts'
    if not isinstance(value, dict) or not value or not set(value) <= set(CALLBACK_KINDS):
        return shape
    for spec in value.values():
        if not isinstance(spec, dict) or not {"type", "max_attempts"} <= set(spec) <= set(Callback.fields()):
            return shape
        if text_check(_MAX_NAME_LENGTH)(spec["type"]) or _int_between(1, settings.MAX_MAX_ATTEMPTS)(
            spec["max_attempts"]
        ):
            return shape
        if concurrency_problem(spec.get("concurrency")) or spec.get("include_parent_payload", True) is not True:
            return shape
    return _payload(value)  # both callbacks' payloads together within a payload's limit (the record keeps them)


_PARENT_KINDS = {"job": CALLBACK_KINDS, "batch": BATCH_CALLBACK_KINDS}


def _parent(value: Any) -> str | None:
    """A callback's parent: {"kind": "job" | "batch", "id", "callback": which of its callbacks this job is}."""
    if value is None:
        return None
    if isinstance(value, dict) and value.get("kind") == STEP_PARENT:
        return step_parent_problem(value, text_check(_MAX_NAME_LENGTH))
    ok = (
        isinstance(value, dict)
        and set(value) == {"kind", "id", "callback"}
        and value["kind"] in _PARENT_KINDS
        and value["callback"] in _PARENT_KINDS[value["kind"]]
        and text_check(_MAX_NAME_LENGTH)(value["id"]) is None
    )
    return None if ok else 'must be {"kind": "job" or "batch", "id", "callback": the callback it is}'


def _started_by(value: Any) -> str | None:
    """What started a trigger's job: {"trigger": its name, "event": the event's id} (shared/waits/triggers.py)."""
    if value is None:
        return None
    ok = isinstance(value, dict) and set(value) == {"trigger", "event"}
    if ok and all(text_check(_MAX_NAME_LENGTH)(text) is None for text in value.values()):
        return None
    return 'must be {"trigger": its name, "event": the event\'s id}'


_MAX_NAME_LENGTH = 256  # tenants, job types, schedule names, timestamps: far above any real one
# Every field a job message may carry, and what it must be. `id`/`tenant` are checked first, apart.
_FIELD_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "v": _version,
    "type": text_check(_MAX_NAME_LENGTH),
    "payload": _payload,
    "max_attempts": _int_between(1, settings.MAX_MAX_ATTEMPTS),
    "enqueued_at": timestamp_check,
    "schedule": _optional(text_check(_MAX_NAME_LENGTH)),
    "scheduled_for": _optional(text_check(_MAX_NAME_LENGTH)),
    "timeout_seconds": _optional(_int_between(1, settings.MAX_JOB_TIMEOUT_SECONDS)),
    "due_at": _optional(timestamp_check),
    "concurrency": concurrency_problem,
    "throttle": lambda value: None if value is None else flow_options.problem("throttle", value),
    "debounce": lambda value: None if value is None else flow_options.problem("debounce", value),
    "debounce_seq": _optional(_int_between(1, 2**53)),
    "batch": _batch_member,
    "callbacks": _callbacks,
    "parent": _parent,
    "started_by": _started_by,
    "overlap": _optional(_one_of(*Overlap)),
    "trigger": _optional(_one_of(Trigger.MANUAL, Trigger.BACKFILL)),
    "request": _optional(text_check(_MAX_NAME_LENGTH)),
}
_REQUIRED = ("type", "max_attempts", "enqueued_at")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_object(body: str) -> dict[str, Any]:
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        raise UnreadableMessage(f"unreadable job message: not JSON ({type(error).__name__})") from None
    if not isinstance(data, dict):
        raise UnreadableMessage(f"unreadable job message: a JSON {type(data).__name__}, not an object")
    return data


_FILLED_AT_EACH_FIRING = ("id", "enqueued_at")  # what a schedule's firing template leaves out


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
    # The job's own throttle; None: its type's, if the type declares one (shared/worker/admit/throttle_turns.py).
    throttle: Throttle | None = None
    # A debounced job: its debounce (its key read already) and its arrival number in its key's group, which decides
    # at the worker whether it runs, waits or was superseded (shared/worker/admit/debounced.py).
    debounce: Debounce | None = None
    debounce_seq: int | None = None
    batch: BatchMember | None = None  # the batch it belongs to (shared/batches/batches.py)
    # Jobs to enqueue when it ends: {"on_success"?, "on_failure"?} (shared/batches/callbacks.py).
    callbacks: dict[str, Callback] | None = None
    # Set on a callback: {"kind": "job" | "batch", "id": the parent's, "callback": which callback it is}.
    parent: dict[str, str] | None = None
    # Set on a job an event trigger started: {"trigger": its name, "event": the event's id}.
    started_by: dict[str, str] | None = None
    # A schedule's run only: "skip" when the schedule skips overlapping runs (the claim checks for a live
    # earlier run first: shared/store/schedules/schedule_runs.py); what started it, when not the schedule's firing.
    overlap: str | None = None
    trigger: str | None = None
    # A keyed job's request fingerprint (shared/ids.py request_fingerprint): of the requests sent under one
    # idempotency key, the first claimed is the job's, and only its messages run (shared/store/jobs/job_store.py).
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
        throttle: Throttle | None = None,
        batch: BatchMember | None = None,
        callbacks: dict[str, Callback] | None = None,
        parent: dict[str, str] | None = None,
        debounce: Debounce | None = None,
        started_by: dict[str, str] | None = None,
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
            throttle=throttle,
            debounce=debounce,
            batch=batch,
            callbacks=callbacks,
            parent=parent,
            started_by=started_by,
            overlap=str(overlap) if overlap is not Overlap.ALLOW else None,
            trigger=str(trigger) if trigger is not Trigger.SCHEDULE else None,
            request=request,
        )

    @classmethod
    def firing_template(
        cls,
        tenant: str,
        schedule: str,
        spec: JobSpec,
        overlap: Overlap = Overlap.ALLOW,
        throttle: Throttle | None = None,
    ) -> str:
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
            throttle=throttle,
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
            "throttle": self.throttle.to_dict() if self.throttle else None,
            "debounce": self.debounce.to_dict() if self.debounce else None,
            "debounce_seq": self.debounce_seq,
            "batch": self.batch.to_dict() if self.batch else None,
            "callbacks": callbacks_to_dict(self.callbacks) if self.callbacks else None,
            "parent": self.parent,
            "started_by": self.started_by,
            "overlap": self.overlap,
            "trigger": self.trigger,
            "request": self.request,
        }
        return body | {name: value for name, value in optional.items() if value is not None}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def in_run(self, retries: int) -> JobMessage:
        """The message as its record's run `retries` of the job (its record's count of retries): a batch
        member's end counts in that run (shared/store/batches/batch_items.py)."""
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
        return cls.from_data(json_object(body), sent_at=sent_at, secret=secret)

    @classmethod
    def from_data(cls, data: dict[str, Any], *, sent_at: float, secret: bytes) -> JobMessage:
        """`from_body` on a parsed JSON object."""
        tenant = data.get("tenant")
        if text_check(_MAX_NAME_LENGTH)(tenant) is not None:
            raise UnreadableMessage("unreadable job message: field 'tenant' must be a non-empty string")
        if "id" in data:
            job_id = data["id"]
            if not isinstance(job_id, str) or ids.verify(secret, tenant, job_id) is None:
                raise UnreadableMessage(f"forged job message: its id does not verify for tenant {tenant!r}")
        else:
            schedule = data.get("schedule")
            if text_check(_MAX_NAME_LENGTH)(schedule) is not None:
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
        if forged := forged_lineage(secret, tenant, job_id, valid):
            # Recorded dead without them: a forged batch or parent is never counted or named.
            valid = {name: value for name, value in valid.items() if name not in forged}
            problems += [f"field {name!r} is not this job's: its id is not derived from it" for name in forged]
        if problems:
            raise UnreadableMessage("unreadable job message: " + "; ".join(problems), job=valid)
        return cls(**_typed({"payload": None} | valid))  # no payload is a null payload, as the API accepts it


def _typed(fields: dict[str, Any]) -> dict[str, Any]:
    """A message's fields as JobMessage holds them: its JSON objects as their values."""
    if "concurrency" in fields:
        fields = {**fields, "concurrency": Concurrency.of(fields["concurrency"])}
    if fields.get("throttle") is not None:  # checked already (`_FIELD_CHECKS`), or written by `to_dict`
        fields = {**fields, "throttle": Throttle.parse(fields["throttle"])}
    if fields.get("debounce") is not None:
        fields = {**fields, "debounce": Debounce.parse(fields["debounce"])}
    if "batch" in fields:
        fields = {**fields, "batch": BatchMember.of(fields["batch"])}
    if fields.get("callbacks") is not None:
        fields = {**fields, "callbacks": callbacks_of(fields["callbacks"])}
    return fields
