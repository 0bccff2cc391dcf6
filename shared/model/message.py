"""A job as it travels: the jobs queue's message (`JobMessage`), its batch membership (`BatchMember`), and
the wire validator that reads a message field by field (`JobMessage.from_body`, with the checks of
shared/model/message_fields.py) and says why one cannot run (`UnreadableMessage`)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from shared import ids
from shared.errors import CorralError
from shared.flow.debounce import Debounce
from shared.flow.options import FlowOptions
from shared.flow.priority import Priority
from shared.flow.throttle import Throttle
from shared.flow.unique import Unique
from shared.model.firing import SCHEDULED_TIME, scheduled_time
from shared.model.lineage import forged_lineage
from shared.model.message_fields import FIELD_CHECKS, MAX_NAME_LENGTH, REQUIRED, text_check
from shared.model.spec import (
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
    # A schedule's run only: its schedule's unique key, which the worker takes before its claim, or records the run
    # `skipped` naming the job holding it (shared/worker/admit/unique_runs.py). A job the API enqueues took its key
    # at enqueue, and carries none.
    unique: Unique | None = None
    # The job's priority level, when not the default (shared/flow/priority.py): its lane, which every send of it
    # keeps (shared/aws/queue.py `lane_url`).
    priority: str | None = None
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
        priority: Priority = Priority.DEFAULT,
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
            priority=priority.carried,
        )

    @property
    def level(self) -> Priority:
        """Its priority: which lane carries it."""
        return Priority.of(self.priority)

    @classmethod
    def firing_template(
        cls,
        tenant: str,
        schedule: str,
        spec: JobSpec,
        overlap: Overlap = Overlap.ALLOW,
        flow: FlowOptions | None = None,
    ) -> str:
        """The target Input of a recurring schedule: the message of its job, without what each firing fills in.

        No `id` or `enqueued_at` (`from_data` derives them at each firing), and Scheduler's placeholder
        for `scheduled_for`. No timeout_seconds when the spec has none: each run gets its type's default.
        `overlap` and the schedule's flow options (`flow`: throttle, debounce, unique, priority) travel in the Input,
        so the worker knows them at each firing without reading the schedule.
        """
        message = cls.of(
            spec,
            job_id="",
            tenant=tenant,
            enqueued_at=0,
            schedule=schedule,
            scheduled_for=SCHEDULED_TIME,
            overlap=overlap,
        ).with_flow(flow or FlowOptions())
        fields = {name: value for name, value in message.to_dict().items() if name not in _FILLED_AT_EACH_FIRING}
        return json.dumps(fields, separators=(",", ":"))

    def with_flow(self, flow: FlowOptions) -> JobMessage:
        """The message with a schedule's run's flow options: its throttle, debounce, unique key and priority."""
        priority = flow.to_dict().get("priority")  # the default level is left out, as a message carries none
        return dataclasses.replace(
            self, throttle=flow.throttle, debounce=flow.debounce, unique=flow.unique, priority=priority
        )

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
            "unique": self.unique.to_dict() if self.unique else None,
            "priority": self.priority,
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
        if text_check(MAX_NAME_LENGTH)(tenant) is not None:
            raise UnreadableMessage("unreadable job message: field 'tenant' must be a non-empty string")
        if "id" in data:
            job_id = data["id"]
            if not isinstance(job_id, str) or ids.verify(secret, tenant, job_id) is None:
                raise UnreadableMessage(f"forged job message: its id does not verify for tenant {tenant!r}")
        else:
            schedule = data.get("schedule")
            if text_check(MAX_NAME_LENGTH)(schedule) is not None:
                raise UnreadableMessage("unreadable job message: no id, and no schedule to derive one from")
            scheduled_for = scheduled_time(data.get("scheduled_for"), sent_at)
            job_id = ids.scheduled_id(secret, tenant, schedule, scheduled_for)
            data = {**data, "scheduled_for": scheduled_for, "enqueued_at": sent_at}
        fields = {name: value for name, value in data.items() if name not in ("id", "tenant")}
        problems = [f"unknown field {name!r}" for name in fields if name not in FIELD_CHECKS]
        problems += [f"missing field {name!r}" for name in REQUIRED if name not in fields]
        valid: dict[str, Any] = {"id": job_id, "tenant": tenant}
        for name, value in fields.items():
            try:
                problem = FIELD_CHECKS[name](value) if name in FIELD_CHECKS else None
            except (ValueError, TypeError, RecursionError) as error:  # a payload json cannot write back
                problem = f"cannot be serialised ({type(error).__name__})"
            if problem:
                problems.append(f"field {name!r} {problem}")
            elif name in FIELD_CHECKS:
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
    if fields.get("throttle") is not None:  # checked already (`FIELD_CHECKS`), or written by `to_dict`
        fields = {**fields, "throttle": Throttle.parse(fields["throttle"])}
    if fields.get("debounce") is not None:
        fields = {**fields, "debounce": Debounce.parse(fields["debounce"])}
    if fields.get("unique") is not None:
        fields = {**fields, "unique": Unique.parse(fields["unique"])}
    if "batch" in fields:
        fields = {**fields, "batch": BatchMember.of(fields["batch"])}
    if fields.get("callbacks") is not None:
        fields = {**fields, "callbacks": callbacks_of(fields["callbacks"])}
    return fields
