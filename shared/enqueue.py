"""Insert: accept a job and put it on the queue. One AWS call, the SQS send; no store write.

In bulk, up to settings.MAX_BATCH_JOBS jobs go out in SendMessageBatch calls (10 per call);
each job is accepted or rejected on its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared import ids, job_types, queue, settings
from shared.model import JobMessage
from shared.signing import id_secret


class InvalidJob(ValueError):
    """The job cannot be accepted; `field` names the offending input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class PayloadTooLarge(InvalidJob):
    pass


@dataclass(frozen=True)
class JobRequest:
    type: str
    payload: Any = None
    idempotency_key: str | None = None
    delay_seconds: int = 0
    max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS


def build_message(tenant: str, request: JobRequest, now: float) -> JobMessage:
    """Validate a request and turn it into the message the queue carries."""
    if job_types.lookup(request.type) is None:
        raise InvalidJob("type", f"unknown job type {request.type!r}; known types: {', '.join(job_types.names())}")
    size = len(json.dumps(request.payload, separators=(",", ":")).encode())
    if size > settings.MAX_PAYLOAD_BYTES:
        raise PayloadTooLarge("payload", f"{size} bytes is over the limit of {settings.MAX_PAYLOAD_BYTES} bytes")
    if not 1 <= request.max_attempts <= settings.MAX_MAX_ATTEMPTS:
        raise InvalidJob("max_attempts", f"must be between 1 and {settings.MAX_MAX_ATTEMPTS}")
    if not 0 <= request.delay_seconds <= settings.MAX_SQS_DELAY_SECONDS:
        raise InvalidJob("delay_seconds", f"must be between 0 and {settings.MAX_SQS_DELAY_SECONDS}")
    secret = id_secret()
    job_id = (
        ids.keyed_id(secret, tenant, request.idempotency_key)
        if request.idempotency_key
        else ids.timed_id(secret, tenant, now)
    )
    return JobMessage(
        id=job_id,
        tenant=tenant,
        type=request.type,
        payload=request.payload,
        max_attempts=request.max_attempts,
        enqueued_at=now,
    )


def enqueue(tenant: str, request: JobRequest) -> JobMessage:
    message = build_message(tenant, request, time.time())
    queue.send(message, request.delay_seconds)
    return message


@dataclass(frozen=True)
class NotSent:
    """A valid job the queue did not take (briefly unavailable): nothing was enqueued; retry it."""

    reason: str


BulkOutcome = JobMessage | InvalidJob | NotSent


def enqueue_many(tenant: str, requests: Sequence[JobRequest]) -> list[BulkOutcome]:
    """Enqueue each request; the outcome per request, in order. One bad job loses none of the others."""
    now = time.time()
    outcomes: list[BulkOutcome] = []
    for request in requests:
        try:
            outcomes.append(build_message(tenant, request, now))
        except InvalidJob as error:
            outcomes.append(error)
    valid = [(index, outcome) for index, outcome in enumerate(outcomes) if isinstance(outcome, JobMessage)]
    not_sent = queue.send_batch([(message, requests[index].delay_seconds) for index, message in valid])
    for (index, _), reason in zip(valid, not_sent, strict=True):
        if reason is not None:
            outcomes[index] = NotSent(reason)
    return outcomes
