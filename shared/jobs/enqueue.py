"""Insert: accept a job and put it on the queue. One AWS call, the SQS send; no store write.

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
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import ids, settings
from shared.aws import eventbridge, queue
from shared.aws.eventbridge import at_expression
from shared.errors import InvalidRequest, PayloadTooLarge, QuotaExceeded
from shared.jobs import far_future, job_types, payload_schemas, payloads
from shared.model import Concurrency, JobMessage, JobSpec
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

    @classmethod
    def from_fields(cls, values: Mapping[str, Any]) -> JobRequest:
        """The request of a POST /v1/jobs body's fields: the spec's beside the enqueue options."""
        spec = JobSpec(**{name: value for name, value in values.items() if name in _SPEC_FIELDS})
        options = {name: value for name, value in values.items() if name not in _SPEC_FIELDS}
        if isinstance(options.get("concurrency"), Mapping):
            options["concurrency"] = Concurrency.of(options["concurrency"])
        return cls(spec, **options)


def check_job(spec: JobSpec, *, tenant: str, field_prefix: str = "", scheduler_input: bool = False) -> None:
    """What every job must satisfy, enqueued now or by a schedule later.

    The payload is checked against its type's payload schema, and by a built-in type's own validator
    and tenant check; a customer's `validate` runs on the worker instead (shared/worker/executor.py).
    `tenant`: whose job it is; a type with a tenant check (a `lambda` job's allow-list) asks whether
    this tenant may submit the payload.
    `field_prefix`: where the spec sits in the request, for the field an InvalidRequest names ("job.").
    `scheduler_input`: the job travels as an EventBridge Scheduler target Input (a schedule's
    firings, a job due beyond SQS's longest delay), where Scheduler would rewrite its keywords.
    A max_attempts of None (the job type's default) is always valid.
    """
    found = job_types.declared(spec.type)
    if found is None:
        known = ", ".join(job_types.declared_names())
        raise InvalidRequest(f"{field_prefix}type", f"unknown job type {spec.type!r}; known types: {known}")
    field = f"{field_prefix}payload"
    nesting = payloads.depth(spec.payload)
    if nesting > settings.MAX_PAYLOAD_DEPTH:
        raise InvalidRequest(field, f"nests {nesting} levels deep; the limit is {settings.MAX_PAYLOAD_DEPTH}")
    try:
        serialised = json.dumps(spec.payload, separators=(",", ":"), allow_nan=False)
    except ValueError as error:
        where = payloads.non_finite_number(spec.payload, field) or field
        raise InvalidRequest(where, "NaN and Infinity are not JSON numbers") from error
    size = len(serialised.encode())
    if size > settings.MAX_PAYLOAD_BYTES:
        raise PayloadTooLarge(field, f"{size} bytes is over the limit of {settings.MAX_PAYLOAD_BYTES} bytes")
    if scheduler_input and payloads.SCHEDULER_KEYWORD in serialised.lower():
        where = payloads.scheduler_keyword(spec.payload, field) or field
        raise InvalidRequest(
            where, f"may not contain {payloads.SCHEDULER_KEYWORD!r} (EventBridge Scheduler would rewrite it)"
        )
    if spec.max_attempts is not None and not 1 <= spec.max_attempts <= settings.MAX_MAX_ATTEMPTS:
        raise InvalidRequest(f"{field_prefix}max_attempts", f"must be between 1 and {settings.MAX_MAX_ATTEMPTS}")
    if spec.timeout_seconds is not None and not 1 <= spec.timeout_seconds <= found.max_timeout_seconds:
        raise InvalidRequest(
            f"{field_prefix}timeout_seconds",
            f"must be between 1 and {found.max_timeout_seconds} (the most a {spec.type!r} job may ask for)",
        )
    try:
        if found.payload_schema is not None:
            payload_schemas.check(found.payload_schema, spec.payload)
        if found.validate is not None:  # a built-in's: declared() carries no customer's
            found.validate(spec.payload)
        if found.check_tenant is not None:
            found.check_tenant(spec.payload, tenant)
    except job_types.InvalidPayload as error:
        raise InvalidRequest(f"{field_prefix}{error.field}", error.message) from error


def with_max_attempts(spec: JobSpec) -> JobSpec:
    """The spec with its max_attempts decided: the one it gives, else its job type's default."""
    if spec.max_attempts is not None:
        return spec
    found = job_types.declared(spec.type)
    return replace(spec, max_attempts=found.max_attempts if found else settings.DEFAULT_MAX_ATTEMPTS)


def delay_of(request: JobRequest, now: float) -> float:
    """Seconds until the job is due (0: now). A run_at in the past means now."""
    if request.delay_seconds is not None and request.run_at is not None:
        raise InvalidRequest("run_at", "give either delay_seconds or run_at, not both")
    horizon = settings.MAX_RUN_AT_DAYS * 86_400
    if request.run_at is not None:
        due = request.run_at if request.run_at.tzinfo else request.run_at.replace(tzinfo=UTC)
        delay = max(0.0, due.timestamp() - now)
        if delay > horizon:
            raise InvalidRequest("run_at", f"must be at most {settings.MAX_RUN_AT_DAYS} days ahead")
        return delay
    delay = request.delay_seconds or 0
    if not 0 <= delay <= horizon:
        raise InvalidRequest("delay_seconds", f"must be between 0 and {horizon} ({settings.MAX_RUN_AT_DAYS} days)")
    return float(delay)


def build_message(tenant: str, request: JobRequest, now: float, delay: float = 0.0) -> JobMessage:
    """Validate a request and turn it into the message the queue carries."""
    spec = with_max_attempts(request.spec)
    check_job(spec, tenant=tenant, scheduler_input=delay > settings.MAX_SQS_DELAY_SECONDS)
    secret = id_secret()
    if request.idempotency_key:
        job_id = ids.keyed_id(secret, tenant, request.idempotency_key)
    elif delay > 0:
        job_id = ids.delayed_id(secret, tenant, now, now + delay)  # GET answers `queued` until it is due
    else:
        job_id = ids.timed_id(secret, tenant, now)
    return JobMessage.of(spec, job_id=job_id, tenant=tenant, enqueued_at=now, concurrency=request.concurrency)


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


def enqueue(tenant: str, request: JobRequest) -> JobMessage:
    now = time.time()
    message, delay = _prepare(tenant, request, now)
    rate_limit.check(tenant)  # RateLimited: nothing sent
    if delay <= settings.MAX_SQS_DELAY_SECONDS:
        queue.send(message, math.ceil(delay))
    else:
        _schedule_later(request, message, now, delay)
    return message


NOT_SENT_REASON = "the job service is briefly unavailable; this job was not enqueued: retry it"


@dataclass(frozen=True)
class NotSent:
    """A valid job the queue did not take (briefly unavailable): nothing was enqueued; retry it.

    `reason` is what the client is told; `detail` (AWS's own words, which can name accounts and
    roles) is for the operator's log only.
    """

    detail: str
    reason: str = NOT_SENT_REASON


BulkOutcome = JobMessage | InvalidRequest | NotSent | QuotaExceeded


def enqueue_many(tenant: str, requests: Sequence[JobRequest]) -> list[BulkOutcome]:
    """Enqueue each request; the outcome per request, in order. One bad job loses none of the others.

    The rate limit counts every job of the request, all or nothing: RateLimited sends none.
    """
    rate_limit.check(tenant, len(requests))
    now = time.time()
    outcomes: list[BulkOutcome] = []
    to_queue: list[tuple[int, JobMessage, int]] = []  # (index, message, SQS delay): the jobs sent in batches
    for index, request in enumerate(requests):
        try:
            message, delay = _prepare(tenant, request, now)
        except InvalidRequest as error:
            outcomes.append(error)
            continue
        outcomes.append(message)
        if delay <= settings.MAX_SQS_DELAY_SECONDS:
            to_queue.append((index, message, math.ceil(delay)))
            continue
        try:  # rare in bulk: one CreateSchedule per far-future job
            _schedule_later(request, message, now, delay)
        except (InvalidRequest, QuotaExceeded) as error:
            outcomes[index] = error
        except (ClientError, BotoCoreError) as error:
            outcomes[index] = NotSent(f"{type(error).__name__}: {error}")
    not_sent = queue.send_batch([(message, delay) for _, message, delay in to_queue])
    for (index, _, _), detail in zip(to_queue, not_sent, strict=True):
        if detail is not None:
            outcomes[index] = NotSent(detail)
    return outcomes
