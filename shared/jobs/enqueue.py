"""Insert: accept a job and put it on the queue. One AWS call, the SQS send; no store write (unique, debounce aside).

A job due more than 15 minutes ahead (beyond SQS's longest delay) becomes a
one-time EventBridge Scheduler at() schedule that puts it on the queue when it
is due and then deletes itself: still one AWS call, CreateSchedule instead of
SendMessage.

In bulk, up to settings.MAX_BATCH_JOBS jobs go out in SendMessageBatch calls (10 per call);
each job is accepted or rejected on its own.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import ids, settings
from shared.aws import eventbridge, queue
from shared.aws.eventbridge import at_expression
from shared.errors import InvalidRequest, PayloadTooLarge, QuotaExceeded
from shared.flow import options as flow_options
from shared.flow.options import FlowOptions
from shared.flow.unique import Unique
from shared.jobs import far_future, job_types
from shared.jobs.callback_bodies import CALLBACK_VIEW_ROOM_BYTES, VIEW_IN_BODY, with_view
from shared.jobs.job_types import check_job, with_max_attempts
from shared.model.message import JobMessage
from shared.model.spec import Callback, Concurrency, JobSpec, callbacks_to_dict
from shared.store.flow import unique_keys
from shared.store.flow.unique_keys import DuplicateOf

if TYPE_CHECKING:
    from shared.store.flow import debounce_items
from shared.store.id_secret import id_secret
from shared.tenants import rate_limit

_SPEC_FIELDS = frozenset(spec_field.name for spec_field in fields(JobSpec))


@dataclass(frozen=True)
class JobRequest:
    """A job to enqueue now: its spec, and when and under which key it is enqueued."""

    spec: JobSpec
    idempotency_key: str | None = None
    delay_seconds: int | None = None
    run_at: datetime | None = None
    concurrency: Concurrency | None = None  # the job's own key and limit (shared/jobs/concurrency.py)
    # Jobs to enqueue when it ends, as the request gives them (checked into a Callback each: `check_callback`):
    # once it succeeded, once it is dead (shared/batches/callbacks.py).
    on_success: Mapping[str, Any] | None = None
    on_failure: Mapping[str, Any] | None = None
    # Flow control, as the body gives them (shared/flow/options.py reads them, with the type's defaults).
    throttle: Mapping[str, Any] | None = None
    debounce: Mapping[str, Any] | None = None
    unique: Mapping[str, Any] | None = None
    priority: str | None = None

    @property
    def jobs(self) -> int:
        """How many jobs the request is, as the rate limit counts them: the job and its callbacks."""
        return 1 + (self.on_success is not None) + (self.on_failure is not None)

    def canonical(self) -> dict[str, Any]:
        """The request as an idempotency key remembers it (shared/ids.py `request_fingerprint`): every field
        it gives, none it leaves out or gives as null (the key itself aside); `run_at` in epoch seconds."""
        run_at = None
        if self.run_at is not None:
            run_at = (self.run_at if self.run_at.tzinfo else self.run_at.replace(tzinfo=UTC)).timestamp()
        fields = {
            "type": self.spec.type,
            "payload": self.spec.payload,
            "max_attempts": self.spec.max_attempts,
            "timeout_seconds": self.spec.timeout_seconds,
            "delay_seconds": self.delay_seconds,
            "run_at": run_at,
            "concurrency": self.concurrency.to_dict() if self.concurrency is not None else None,
            "on_success": present_fields(self.on_success),
            "on_failure": present_fields(self.on_failure),
            **{name: getattr(self, name) for name in flow_options.FIELDS},
        }
        return {name: value for name, value in fields.items() if value is not None}

    @classmethod
    def from_fields(cls, values: Mapping[str, Any]) -> JobRequest:
        """The request of a POST /v1/jobs body's fields: the spec's beside the enqueue options."""
        spec = JobSpec(**{name: value for name, value in values.items() if name in _SPEC_FIELDS})
        options = {name: value for name, value in values.items() if name not in _SPEC_FIELDS}
        if isinstance(options.get("concurrency"), Mapping):
            options["concurrency"] = Concurrency.of(options["concurrency"])
        return cls(spec, **options)


def present_fields(fields: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The fields given a value: a field given as null is the same request as one left out."""
    return None if fields is None else {name: value for name, value in fields.items() if value is not None}


# What a callback's payload gets, so its check at enqueue measures it with that key in it: a job's
# view (all but its result, which may be dropped to fit: `_fitted`) or a batch's.
_PLACEHOLDER_PARENT_VIEW = {
    "id": "j" + "x" * 42,
    "type": "t" * 64,
    "status": "completed_with_failures",
    "attempts": 25,
    "error": None,
    "enqueued_at": 1.0e10,
    "started_at": 1.0e10,
    "finished_at": 1.0e10,
}


def check_callback(tenant: str, body: Mapping[str, Any], *, field: str, adds: str) -> Callback:
    """A callback's body, checked as a job (its type, its payload with `adds` in it, its limits): the
    callback its parent's message or batch keeps, its max_attempts decided. InvalidRequest names the field
    under `field` ("on_success.payload")."""
    unknown = sorted(set(body) - set(Callback.fields()))
    if unknown:
        raise InvalidRequest(f"{field}.{unknown[0]}", "not a field of a callback")
    include_payload = body.get("include_parent_payload")
    if include_payload is not None and adds != "parent":
        raise InvalidRequest(f"{field}.include_parent_payload", f"a job's callbacks only: this one gets {adds!r}")
    if include_payload not in (None, True, False):
        raise InvalidRequest(f"{field}.include_parent_payload", "must be true or false")
    payload = body.get("payload")
    job_type = body.get("type", "")
    if payload is not None and not isinstance(payload, dict):
        raise InvalidRequest(f"{field}.payload", f"must be an object (or null): the callback gets {adds!r} in it")
    where, holder = ("payload.body", (payload or {}).get("body")) if job_type in VIEW_IN_BODY else ("payload", payload)
    if holder is not None and not isinstance(holder, dict):
        raise InvalidRequest(f"{field}.{where}", f"must be an object (or null): the callback gets {adds!r} in it")
    if holder and adds in holder:
        raise InvalidRequest(f"{field}.{where}.{adds}", "is the callback's own: corral sets it")
    given = JobSpec(**{name: body.get(name) for name in _SPEC_FIELDS} | {"type": job_type})
    spec = with_max_attempts(replace(given, payload=with_view(job_type, payload, adds, _PLACEHOLDER_PARENT_VIEW)))
    check_job(spec, tenant=tenant, field_prefix=f"{field}.")
    own, most = len(json.dumps(payload).encode()), settings.MAX_PAYLOAD_BYTES - CALLBACK_VIEW_ROOM_BYTES
    if own > most:
        why = f"is {own} bytes; a callback's may be {most}, to leave room for {adds!r}"
        raise InvalidRequest(f"{field}.payload", why)
    return Callback(replace(spec, payload=payload), Concurrency.of(body.get("concurrency")), bool(include_payload))


def delay_of(request: JobRequest, now: float, *, field_prefix: str = "") -> float:
    """Seconds until the job is due (0: now). A run_at in the past means now."""
    if request.delay_seconds is not None and request.run_at is not None:
        raise InvalidRequest(f"{field_prefix}run_at", "give either delay_seconds or run_at, not both")
    horizon = settings.MAX_RUN_AT_DAYS * 86_400
    if request.run_at is not None:
        due = request.run_at if request.run_at.tzinfo else request.run_at.replace(tzinfo=UTC)
        delay = max(0.0, due.timestamp() - now)
        if delay > horizon:
            raise InvalidRequest(f"{field_prefix}run_at", f"must be at most {settings.MAX_RUN_AT_DAYS} days ahead")
        return delay
    delay = request.delay_seconds or 0
    if not 0 <= delay <= horizon:
        why = f"must be between 0 and {horizon} ({settings.MAX_RUN_AT_DAYS} days)"
        raise InvalidRequest(f"{field_prefix}delay_seconds", why)
    return float(delay)


@dataclass(frozen=True)
class CheckedJob:
    """A request that passed every check: its spec with max_attempts decided, its delay, its callbacks."""

    spec: JobSpec
    delay: float
    callbacks: dict[str, Callback] | None
    flow: FlowOptions = field(default_factory=FlowOptions)


def checked(tenant: str, request: JobRequest, now: float, *, field_prefix: str = "") -> CheckedJob:
    """Check a request as a job; InvalidRequest names the field (under `field_prefix`: "jobs[3].")."""
    delay = delay_of(request, now, field_prefix=field_prefix)
    spec = with_max_attempts(request.spec)
    check_job(spec, tenant=tenant, field_prefix=field_prefix, scheduler_input=delay > settings.MAX_SQS_DELAY_SECONDS)
    callbacks = {
        kind: check_callback(tenant, body, field=f"{field_prefix}{kind}", adds="parent")
        for kind, body in (("on_success", request.on_success), ("on_failure", request.on_failure))
        if body is not None
    }
    # The message and the record carry both: together within a payload's limit (shared/model/message.py).
    size = len(json.dumps(callbacks_to_dict(callbacks), separators=(",", ":")).encode()) if callbacks else 0
    if size > settings.MAX_PAYLOAD_BYTES:
        why = (
            f"on_success and on_failure together are {size} bytes serialised; the limit is {settings.MAX_PAYLOAD_BYTES}"
        )
        raise PayloadTooLarge(f"{field_prefix}{list(callbacks)[-1]}", why)
    return CheckedJob(spec, delay, callbacks or None, flow_of(request, delay, field_prefix=field_prefix))


def flow_of(request: JobRequest, delay: float, *, field_prefix: str = "") -> FlowOptions:
    """The job's flow-control options: its own, else its type's defaults (InvalidRequest naming the field)."""
    given = {name: getattr(request, name) for name in flow_options.FIELDS if getattr(request, name) is not None}
    found = job_types.declared(request.spec.type)
    defaults = found.flow if found is not None else None
    if not given and not defaults:
        return FlowOptions()
    delayed = request.delay_seconds is not None or request.run_at is not None
    return flow_options.of_job(given, defaults, request.spec.payload, delayed=delayed, field_prefix=field_prefix)


def build_message(tenant: str, request: JobRequest, now: float, delay: float = 0.0) -> JobMessage:
    """Validate a request and turn it into the message the queue carries."""
    job = checked(tenant, request, now)
    secret = id_secret()
    if request.idempotency_key:
        job_id = ids.keyed_id(secret, tenant, request.idempotency_key)
    elif delay > 0:
        job_id = ids.delayed_id(secret, tenant, now, now + delay)  # GET answers `queued` until it is due
    else:
        job_id = ids.timed_id(secret, tenant, now)
    return message_of(
        tenant,
        request,
        job,
        job_id,
        now,
        debounce=job.flow.debounce,
        # One key, one request: the job's record keeps the first claimed request's, and only it runs.
        request=ids.request_fingerprint(request.canonical()) if request.idempotency_key else None,
    )


def message_of(
    tenant: str, request: JobRequest, job: CheckedJob, job_id: str, now: float, /, **fields: Any
) -> JobMessage:
    """The message of a request that passed `checked`, under `job_id`: its spec, concurrency key, throttle,
    callbacks and priority (its lane), and any further message `fields` its sender sets (positional first: `request`
    is one of those)."""
    return JobMessage.of(
        job.spec,
        job_id=job_id,
        tenant=tenant,
        enqueued_at=now,
        concurrency=request.concurrency,
        throttle=job.flow.throttle,
        callbacks=job.callbacks,
        priority=job.flow.level,
        **fields,
    )


def delayed_schedule_name(job_id: str) -> str:
    return f"d-{job_id}"


def _prepare(tenant: str, request: JobRequest, now: float) -> tuple[JobMessage, float]:
    """The message and its delay in seconds, or InvalidRequest naming the field."""
    delay = delay_of(request, now)
    return build_message(tenant, request, now, delay), delay


def _schedule_later(request: JobRequest, message: JobMessage, now: float, delay: float) -> None:
    """A job due beyond SQS's longest delay: a one-time at() schedule puts it on the queue when due.

    It holds a unit of the tenant's far-future quota until it arrives or is cancelled (shared/jobs/far_future.py);
    QuotaExceeded at the limit, and the unit comes straight back if the schedule cannot be created.
    """
    due = datetime.fromtimestamp(math.ceil(now + delay), UTC)  # at() has whole seconds: never early
    took = far_future.hold(message.tenant, message.id, due.timestamp())  # False: this job holds one already
    try:
        # due_at marks the message as one that holds a unit: the worker gives it back when it arrives.
        firing = replace(message, due_at=due.timestamp()).to_json()
        eventbridge.create(
            delayed_schedule_name(message.id),
            at_expression(due),
            firing,
            delete_after_completion=True,
            message_group=queue.message_group(message.tenant),
            priority=message.level,
        )
    except eventbridge.AlreadyExists:
        # The same idempotency key enqueued again: one job, already scheduled, holding its unit already.
        if took:
            far_future.release(message.tenant, message.id)
    except Exception as error:
        if took:
            far_future.release(message.tenant, message.id)
        if isinstance(error, eventbridge.Rejected):  # our input, not an outage: retrying it would not help
            field = "run_at" if request.run_at is not None else "delay_seconds"
            raise InvalidRequest(field, "EventBridge Scheduler rejected this delayed job") from error
        raise


def enqueue(tenant: str, request: JobRequest, *, counted: bool = False) -> JobMessage | DuplicateOf:
    """The job sent; or, where another job holds its unique key, that job (nothing sent).

    `counted`: the caller has counted the request against the tenant's rate limit already (an event, which
    counts the jobs its triggers start with its own: shared/waits/sending.py)."""
    now = time.time()
    message, delay = _prepare(tenant, request, now)
    if not counted:
        rate_limit.check(tenant, request.jobs)  # RateLimited: nothing sent. Its callbacks count as jobs too.
    unique = flow_of(request, delay).unique if request.unique is not None or _type_has_flow(request) else None
    if unique is not None and (holder := unique_keys.take(tenant, unique, message.id, now, now + delay)):
        return holder
    arrived = None
    # Imported here: only a debounced job needs its group's item (the API's cold start loads none of it).
    from shared.store.flow import debounce_items

    try:
        if message.debounce is not None:
            message, arrived = debounce_items.arrive_message(message, now)
            delay = arrived.delay_seconds
        if delay <= settings.MAX_SQS_DELAY_SECONDS:
            queue.send(message, math.ceil(delay))
        else:
            _schedule_later(request, message, now, delay)
    except Exception:
        if unique is not None:
            unique_keys.not_sent(tenant, unique, message.id)
        if arrived is not None:
            debounce_items.undo_unsent(message, arrived)
        raise
    if unique is not None:
        unique_keys.sent(tenant, unique, message.id)
    return message


def _type_has_flow(request: JobRequest) -> bool:
    found = job_types.declared(request.spec.type)
    return found is not None and bool(found.flow)


NOT_SENT_REASON = "the job service is briefly unavailable; this job was not enqueued: retry it"


@dataclass(frozen=True)
class NotSent:
    """A valid job the queue did not take (briefly unavailable): nothing was enqueued; retry it.

    `reason` is what the client is told; `detail` (AWS's own words, which can name accounts and
    roles) is for the operator's log only.
    """

    detail: str
    reason: str = NOT_SENT_REASON


BulkOutcome = JobMessage | InvalidRequest | NotSent | QuotaExceeded | DuplicateOf


def enqueue_many(tenant: str, requests: Sequence[JobRequest]) -> list[BulkOutcome]:
    """Enqueue each request; the outcome per request, in order. One bad job loses none of the others.

    The rate limit counts every job of the request (callbacks too), all or nothing: RateLimited sends none.
    A job whose unique key another job holds is answered with that job (DuplicateOf), and not sent.
    """
    rate_limit.check(tenant, sum(request.jobs for request in requests))
    now = time.time()
    outcomes: list[BulkOutcome] = []
    prepared: list[tuple[int, JobRequest, JobMessage, float]] = []
    locked: dict[int, Unique] = {}  # index -> the unique key its job took
    arrivals: dict[int, debounce_items.Arrived] = {}  # index -> its debounced job's arrival
    from shared.store.flow import debounce_items  # imported here: see `enqueue`

    for index, request in enumerate(requests):
        try:
            message, delay = _prepare(tenant, request, now)
            unique = flow_of(request, delay).unique if request.unique is not None or _type_has_flow(request) else None
        except InvalidRequest as error:
            outcomes.append(error)
            continue
        if unique is not None:
            holder = unique_keys.take(tenant, unique, message.id, now, now + delay)
            if holder is not None:
                outcomes.append(holder)
                continue
            locked[index] = unique
        if message.debounce is not None:
            try:
                message, arrivals[index] = debounce_items.arrive_message(message, now)
            except (ClientError, BotoCoreError, debounce_items.DebounceContended) as error:
                outcomes.append(NotSent(f"{type(error).__name__}: {error}"))
                if index in locked:
                    unique_keys.not_sent(tenant, locked.pop(index), message.id)
                continue
            delay = arrivals[index].delay_seconds
        outcomes.append(message)
        prepared.append((index, request, message, delay))
    sent = send_prepared([(request, message, delay) for _, request, message, delay in prepared], now)
    for (index, _, message, _), problem in zip(prepared, sent, strict=True):
        if problem is not None:
            outcomes[index] = problem
            if index in arrivals:
                debounce_items.undo_unsent(message, arrivals[index])
        if index in locked:
            (unique_keys.sent if problem is None else unique_keys.not_sent)(tenant, locked[index], message.id)
    return outcomes


def send_prepared(
    prepared: Sequence[tuple[JobRequest, JobMessage, float]], now: float
) -> list[InvalidRequest | NotSent | QuotaExceeded | None]:
    """Send checked jobs, (request, message, delay) each: in SendMessageBatch calls, or a schedule each
    for those due beyond SQS's longest delay. For each, in order, None if it went out, or why not."""
    problems: list[InvalidRequest | NotSent | QuotaExceeded | None] = [None] * len(prepared)
    to_queue: list[tuple[int, JobMessage, int]] = []  # (index, message, SQS delay): the jobs sent in batches
    for index, (request, message, delay) in enumerate(prepared):
        if delay <= settings.MAX_SQS_DELAY_SECONDS:
            to_queue.append((index, message, math.ceil(delay)))
            continue
        try:  # rare in bulk: one CreateSchedule per far-future job
            _schedule_later(request, message, now, delay)
        except (InvalidRequest, QuotaExceeded) as error:
            problems[index] = error
        except (ClientError, BotoCoreError) as error:
            problems[index] = NotSent(f"{type(error).__name__}: {error}")
    not_sent = queue.send_batch([(message, delay) for _, message, delay in to_queue])
    for (index, _, _), detail in zip(to_queue, not_sent, strict=True):
        if detail is not None:
            problems[index] = NotSent(detail)
    return problems
