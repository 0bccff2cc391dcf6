"""A durable job's record while it waits (docs/decisions/durable-jobs.md "Waiting"): marked as keeping a journal,
suspended `waiting` by the attempt that reached a sleep or a wait, and flipped back `queued` by whatever resolves
the wait (an event, a token's completion), each one conditional write of the job's item.

A waiting job holds no lease, no attempt token and no attempt: its suspension gives the attempt back
(`attempts` - 1), so `max_attempts` bounds each step's attempts, not the job's waits. Its `resume_at` is
when its timer's wake message may claim it (the claim's condition, shared/store/jobs/job_claims.py); a flip to
`queued` removes it, so the wake message a resolution sends claims it at once.
"""

from __future__ import annotations

import json
from typing import Any

from shared.model.message import JobMessage
from shared.model.states import Status
from shared.store.jobs import job_items


def mark_journal(job_id: str, token: str) -> bool:
    """The job keeps a journal: every later claim reads it. Written by the attempt holding `token`, before
    the journal's first write (if the worker dies between, the next attempt reads an empty journal or the
    step: never a step it does not know of)."""
    return job_items.conditional(
        Key=job_items.key(job_id),
        UpdateExpression="SET journal = :yes",
        ConditionExpression="attempt_token = :token AND #status = :running",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={
            ":yes": {"BOOL": True},
            ":token": {"S": token},
            ":running": {"S": Status.RUNNING},
        },
    )


def show_queued_wait(message: JobMessage, waiting_for: dict[str, Any]) -> bool:
    """A job no worker has claimed yet waits (its throttle's turn, its debounce group): its record says what for, so
    its view shows `queued` with `waiting_for`. Written when it first waits for that reason, not at each hand-back:
    one small conditional write (no payload: a cancel before its claim keeps its message as for any queued job).
    False if the job has a record other than a queued one of its tenant (nothing is written then)."""
    return job_items.conditional(
        single_attempt=True,
        Key=job_items.key(message.id),
        UpdateExpression=(
            "SET #status = if_not_exists(#status, :queued), #tenant = if_not_exists(#tenant, :tenant), "
            "job_type = if_not_exists(job_type, :type), enqueued_at = if_not_exists(enqueued_at, :enqueued), "
            f"max_attempts = if_not_exists(max_attempts, :max), {job_items.QUEUED_WAITING_FOR} = :waiting_for"
        ),
        ConditionExpression="attribute_not_exists(pk) OR (#status = :queued AND #tenant = :tenant)",
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues={
            ":queued": {"S": Status.QUEUED},
            ":tenant": {"S": message.tenant},
            ":type": {"S": message.type},
            ":enqueued": job_items.n(message.enqueued_at),
            ":max": job_items.n(message.max_attempts),
            ":waiting_for": {"S": json.dumps(waiting_for, separators=(",", ":"))},
        },
    )


def suspend(
    job_id: str, token: str, step: str, waiting_for: dict[str, Any], resume_at: float | None, now: float
) -> bool:
    """The attempt holding `token` stopped at `step`: the job is `waiting` for `waiting_for` until `resume_at`
    (None: only a resolution resumes it), its lease and token released and its attempt given back. False if
    that attempt no longer holds the job."""
    sets = [
        "#status = :waiting",
        "waiting_for = :waiting_for",
        "waiting_step = :step",
        "attempts = attempts - :one",
        "suspended_at = :now",
    ]
    values: dict[str, Any] = {
        ":waiting": {"S": Status.WAITING},
        ":waiting_for": {"S": json.dumps(waiting_for, separators=(",", ":"))},
        ":step": {"S": step},
        ":one": job_items.n(1),
        ":now": job_items.n(now),
        ":token": {"S": token},
        ":running": {"S": Status.RUNNING},
    }
    removes = ["lease_until", "attempt_token"]
    if resume_at is None:
        removes.append("resume_at")
    else:
        sets.append("resume_at = :resume_at")
        values[":resume_at"] = job_items.n(resume_at)
    return job_items.conditional(
        Key=job_items.key(job_id),
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes),
        ConditionExpression="attempt_token = :token AND #status = :running",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues=values,
    )


def wake(job_id: str, step: str, *, single_attempt: bool = False) -> JobMessage | None:
    """What `step` of the job waited for has come (its journal says so already): the job is `queued` again,
    its timer void. The job's message, for the wake message to send; None if the job is not waiting in that
    step (cancelled, run on already, or still suspending: that attempt reads the journal after, and wakes it).
    A job woken already in that step (`queued`) is answered again: its first wake message may have been lost."""
    answer = job_items.write(
        single_attempt=single_attempt,
        Key=job_items.key(job_id),
        UpdateExpression="SET #status = :queued REMOVE resume_at",
        ConditionExpression="#status IN (:waiting, :queued) AND waiting_step = :step",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={
            ":queued": {"S": Status.QUEUED},
            ":waiting": {"S": Status.WAITING},
            ":step": {"S": step},
        },
        ReturnValues="ALL_NEW",
    )
    if isinstance(answer, job_items.ConditionFailed):
        return None
    item = answer["Attributes"]
    return job_items.message_from_item(item, job_items.as_float(item, "enqueued_at") or 0.0)
