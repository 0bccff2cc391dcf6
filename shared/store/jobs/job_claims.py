"""A worker's claim on a job: the one conditional write that starts an attempt, what a failed claim finds
(`ClaimResult`: a sum of the record's states as the claim saw them), and the release of a claim whose
attempt never started. See docs/decisions/claim-and-lease.md.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from shared.model.message import JobMessage
from shared.model.states import Overlap, Status, Trigger
from shared.store.jobs import job_items
from shared.store.schedules import schedule_runs


@dataclass(frozen=True)
class Claimed:
    attempt: int
    token: str
    max_attempts: int  # the record's: the first message of a job sets it (an idempotency key's first request)
    retries: int = 0  # the record's: which run of the job this is (a batch counts each run's end)
    journal: bool = False  # a durable job's record: it keeps a journal, which the attempt reads


@dataclass(frozen=True)
class Finished:
    """Succeeded, dead or cancelled already: a duplicate delivery (or a cancelled job's), acknowledged unrun."""

    status: Status | None = None  # as the record says (None where it was not read)
    retries: int = 0


@dataclass(frozen=True)
class Skipped(Finished):
    """A schedule's run that skips overlaps, met a live earlier run of its schedule: recorded `skipped`
    instead of claimed, so it is finished, and its delivery is acknowledged unrun as any finished job's."""

    reason: str = ""


@dataclass(frozen=True)
class OtherRequest(Finished):
    """A keyed job's message of another request than the one its record keeps (two requests sent with
    one idempotency key): the job is the first request's, so this message is acknowledged unrun, as a
    duplicate's is, and its callbacks never run (docs/decisions/idempotency-keys.md)."""


@dataclass(frozen=True)
class HeldElsewhere:
    """Another delivery holds a live lease on the job."""

    by_this_message: bool
    lease_left_seconds: float


@dataclass(frozen=True)
class Exhausted:
    """Earlier attempts died without recording an outcome, and none are left."""

    attempts: int


@dataclass(frozen=True)
class Contended:
    """The job can run again, but another delivery changed it between our claim and its check
    (e.g. two messages of one job: one recorded `failed` while the other tried to claim)."""


@dataclass(frozen=True)
class Foreign:
    """The job's record belongs to another tenant: a claim never changes a record's tenant."""


@dataclass(frozen=True)
class Asleep:
    """A durable job waiting for a time not yet come, or for a resolution (`resume_in_seconds` None): a wake
    message early by a hair (two machines' clocks) comes back for the rest; any other is stale, acknowledged
    unrun. `by_this_message`: the delivery whose attempt suspended it."""

    resume_in_seconds: float | None
    by_this_message: bool


ClaimResult = Claimed | Finished | HeldElsewhere | Exhausted | Contended | Foreign | Asleep

# A job another delivery may take over: waiting (queued, or failed with its retry due), held by a lease
# that has ended, or a durable job whose timer has come (a sleep's end, a wait's timeout).
TAKEABLE = (
    "(#status IN (:queued, :failed) OR (#status = :running AND lease_until < :now)"
    " OR (#status = :waiting AND resume_at <= :now))"
)


def claim(
    message: JobMessage, message_id: str, now: float, lease_seconds: int, *, single_attempt: bool = False
) -> ClaimResult:
    """Start an attempt: the job is new, queued again by a retry, failed (retry due) or its holder's lease expired.

    `single_attempt`: no botocore retries, for a delivery that runs without the claim if this one fails.

    A keyed job's message claims only a record of its own request, or of none (OtherRequest otherwise):
    of two requests sent with one idempotency key, every attempt runs the same one.

    A run of a schedule that skips overlaps is first checked against its schedule's runs: while an
    earlier one is live, this one is recorded `skipped` (Skipped) and never claimed. Backfilled runs
    are not checked: a backfill asks for every occurrence of its window.

    The record keeps what rebuilds the message (payload_json, written once) and its tenant:
    a claim never changes a record's tenant, so a message naming another tenant cannot take it over.
    """
    if message.overlap == Overlap.SKIP and message.trigger != Trigger.BACKFILL and message.schedule:
        skipped = schedule_runs.skip_if_overlapping(message, now, single_attempt=single_attempt)
        if skipped is not None:
            return Skipped(reason=skipped)
    token = secrets.token_hex(8)
    job_sets, values = job_items.job_fields(message, now)
    values |= {
        ":queued": {"S": Status.QUEUED},
        ":running": {"S": Status.RUNNING},
        ":failed": {"S": Status.FAILED},
        ":waiting": {"S": Status.WAITING},
        ":zero": job_items.n(0),
        ":one": job_items.n(1),
        ":now": job_items.n(now),
        ":lease": job_items.n(now + lease_seconds),
        ":token": {"S": token},
        ":message": {"S": message_id},
    }
    sets = [
        "#status = :running",
        "attempts = if_not_exists(attempts, :zero) + :one",
        "lease_until = :lease",
        "attempt_token = :token",
        "claimed_by = :message",
        "started_at = :now",
        *job_sets,
    ]
    answer = job_items.write(
        single_attempt=single_attempt,
        Key=job_items.key(message.id),
        UpdateExpression="SET " + ", ".join(sets) + f" REMOVE resume_at, waiting_step, {job_items.QUEUED_WAITING_FOR}",
        # An existing record's own max_attempts counts (the first message's, if a later one
        # with the same idempotency key asks for another number; a retry raises it).
        ConditionExpression=(
            "attribute_not_exists(pk) OR (#tenant = :tenant "
            f"AND (attribute_not_exists(attempts) OR attempts < max_attempts) AND {TAKEABLE}"
            + (
                f" AND (attribute_not_exists({job_items.REQUEST}) OR {job_items.REQUEST} = :{job_items.REQUEST})"
                if message.request
                else ""
            )
            + ")"
        ),
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues=values,
        ReturnValues="ALL_NEW",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    if isinstance(answer, job_items.ConditionFailed):
        old = job_items.old_item(answer, message.id)
        if old.get("status", {}).get("S") == Status.CANCELLED and "payload_json" not in old:
            _record_cancelled_message(message)
        return _why_not_claimed(old, message, message_id, now)
    item = answer["Attributes"]
    return Claimed(
        attempt=int(item["attempts"]["N"]),
        token=token,
        max_attempts=int(item["max_attempts"]["N"]),
        retries=job_items.as_int(item, "retries") or 0,
        journal="journal" in item,
    )


def _record_cancelled_message(message: JobMessage) -> None:
    """A job cancelled before any worker saw it: keep its message's content, so it can be retried."""
    known = (
        {
            "payload_json": job_items.payload_json(message.payload),
            "job_type": {"S": message.type},
            "max_attempts": job_items.n(message.max_attempts),
        }
        | job_items.relations(message)
        | job_items.request_fields(message)
    )
    if message.schedule:
        known |= {"schedule_name": {"S": message.schedule}, "scheduled_for": {"S": message.scheduled_for or ""}}
    sets, values = job_items.if_not_exists(known)
    # Any other failure raises: the delivery comes back and records it then; a retry answers 409 until it has.
    job_items.conditional(
        Key=job_items.key(message.id),
        UpdateExpression="SET " + ", ".join(sets),
        ConditionExpression="#status = :cancelled AND #tenant = :tenant",
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues=values | {":cancelled": {"S": Status.CANCELLED}, ":tenant": {"S": message.tenant}},
    )


def _why_not_claimed(old: dict[str, Any], message: JobMessage, message_id: str, now: float) -> ClaimResult:
    """Why the claim's condition failed, from the record as it was then (or re-read)."""
    if not old:
        return Contended()  # the record was there for the condition, gone for the re-read
    if job_items.as_str(old, "tenant") != message.tenant:
        return Foreign()
    kept = job_items.as_str(old, job_items.REQUEST)
    if message.request and kept is not None and kept != message.request:
        return OtherRequest()
    status = Status(old["status"]["S"])
    if status.finished:
        return Finished(status, job_items.as_int(old, "retries") or 0)
    if status is Status.WAITING:
        resume_at = job_items.as_float(old, "resume_at")
        by_this_message = job_items.as_str(old, "claimed_by") == message_id
        return Asleep(None if resume_at is None else resume_at - now, by_this_message)
    lease_left = (job_items.as_float(old, "lease_until") or 0) - now
    if status is Status.RUNNING and lease_left >= 0:
        return HeldElsewhere(
            by_this_message=job_items.as_str(old, "claimed_by") == message_id, lease_left_seconds=lease_left
        )
    attempts = int(old.get("attempts", {"N": "0"})["N"])
    max_attempts = int(old.get("max_attempts", {"N": str(message.max_attempts)})["N"])
    if status in (Status.RUNNING, Status.FAILED) and attempts >= max_attempts:
        return Exhausted(attempts=attempts)  # attempts used up: the last died without an outcome
    return Contended()


def release(job_id: str, token: str) -> bool:
    """Undo a claim whose attempt never started (shared/worker/admit/claim_ahead.py claims a batch's jobs
    ahead): the job is queued again, the attempt not counted. False if that claim no longer holds the job."""
    return _update_held(
        job_id,
        token,
        "SET #status = :queued, attempts = attempts - :one REMOVE lease_until, attempt_token",
        {":queued": {"S": Status.QUEUED}, ":one": job_items.n(1)},
    )


def _update_held(job_id: str, token: str, update: str, values: dict[str, Any]) -> bool:
    """Apply `update` (one attempt) if the claim `token` still holds the job, running. False if it does not."""
    return job_items.conditional(
        single_attempt=True,
        Key=job_items.key(job_id),
        UpdateExpression=update,
        ConditionExpression="attempt_token = :token AND #status = :running",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":token": {"S": token}, ":running": {"S": Status.RUNNING}} | values,
    )
