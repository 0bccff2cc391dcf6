"""Cancel and retry on job records, each one conditional write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.model.message import JobMessage
from shared.model.record import JobRecord
from shared.model.states import Status
from shared.store import table
from shared.store.jobs import job_items


@dataclass(frozen=True)
class Unchanged:
    """The write's condition failed and the record stays as it was: `item` is it now ({} if there is none,
    or if it was not read back)."""

    item: dict[str, Any]


def _update_unless_refused(job_id: str, *, explain: bool = True, **params: Any) -> dict[str, Any] | Unchanged:
    """A conditional UpdateItem returning the new item, or Unchanged with the record as it is (`explain`:
    read back when refused; else Unchanged({}), the caller needing no more than that it was refused)."""
    returns = {"ReturnValues": "ALL_NEW"} | ({"ReturnValuesOnConditionCheckFailure": "ALL_OLD"} if explain else {})
    answer = job_items.write(Key=job_items.key(job_id), **returns, **params)
    if isinstance(answer, job_items.ConditionFailed):
        return Unchanged(job_items.old_item(answer, job_id) if explain else {})
    return answer["Attributes"]


def _cancel_update(
    job_id: str, tenant: str, enqueued_at: float, now: float, known: JobMessage | None = None
) -> dict[str, Any]:
    """The conditional write that cancels a job that has not started (see `cancel`). It also writes
    `retries` where the record has none, so an answer of the updated attributes names the job's run."""
    first_seen: dict[str, dict[str, str]] = {
        "tenant": {"S": tenant},
        "enqueued_at": job_items.n(enqueued_at),
        "retries": job_items.n(0),
    }
    first_seen |= job_items.index_attributes(tenant, enqueued_at, job_id)
    if known is not None:
        first_seen |= {
            "payload_json": job_items.payload_json(known.payload),
            "job_type": {"S": known.type},
            "max_attempts": job_items.n(known.max_attempts),
        }
    sets, values = job_items.if_not_exists(first_seen)
    return {
        "UpdateExpression": "SET "
        + ", ".join(["#status = :cancelled", "cancelled_at = :now", "finished_at = :now", "expires_at = :ttl", *sets])
        + " REMOVE lease_until, resume_at",
        "ConditionExpression": (
            "attribute_not_exists(pk) OR (#tenant = :owner AND "
            "(#status IN (:queued, :failed, :waiting) OR (#status = :running AND lease_until < :now)))"
        ),
        "ExpressionAttributeNames": {"#status": "status", "#tenant": "tenant"},
        "ExpressionAttributeValues": values
        | {
            ":cancelled": {"S": Status.CANCELLED},
            ":queued": {"S": Status.QUEUED},
            ":failed": {"S": Status.FAILED},
            # A durable job's wait: cancelled, it never resumes (every resume goes through this record).
            ":waiting": {"S": Status.WAITING},
            ":running": {"S": Status.RUNNING},
            ":owner": {"S": tenant},
            ":now": job_items.n(now),
            ":ttl": job_items.n(job_items.expires_at(now)),
        },
    }


def cancel(
    job_id: str, tenant: str, enqueued_at: float, now: float, known: JobMessage | None = None
) -> JobRecord | Unchanged:
    """Mark the job cancelled if it has not started: no record yet, queued by a retry, failed and
    waiting for its retry, or `running` under a lease that expired (its attempt died). A claim is a
    conditional write on the same item, so of a claim and a cancel racing, exactly one succeeds.

    `known`: the job's message where the caller has it (a far-future job's schedule), so the
    cancelled job can be retried at once; otherwise the worker records it when the message arrives.
    """
    item = _update_unless_refused(job_id, **_cancel_update(job_id, tenant, enqueued_at, now, known))
    if isinstance(item, Unchanged):
        return item
    return job_items.record_from_item(item)


def cancel_member(job_id: str, tenant: str, enqueued_at: float, now: float) -> int | None:
    """`cancel` for one of a batch's members, many at a time: the run it was cancelled in (the record's
    `retries`), or None if it had started or ended. Nothing more is returned either way: no job's payload
    or result travels back (a batch of 1,000 members would bring back megabytes)."""
    update = _cancel_update(job_id, tenant, enqueued_at, now)
    answer = job_items.write(Key=job_items.key(job_id), ReturnValues="UPDATED_NEW", **update)
    if isinstance(answer, job_items.ConditionFailed):
        return None
    return int(answer["Attributes"]["retries"]["N"])


def statuses(job_ids: list[str]) -> dict[str, str | None]:
    """Each job's status as its record says now (None: no record), reading that attribute alone."""
    jobs = job_items.jobs_client()
    found: dict[str, str | None] = {}
    for job_id in job_ids:
        item = jobs.get_item(
            TableName=table.name(),
            Key=job_items.key(job_id),
            ProjectionExpression="#status",
            ExpressionAttributeNames={"#status": "status"},
        ).get("Item")
        found[job_id] = job_items.as_str(item, "status") if item else None
    return found


RETRYABLE = (Status.DEAD, Status.CANCELLED)


def reset_for_retry(
    job_id: str, tenant: str, now: float, statuses: tuple[Status, ...] = RETRYABLE, *, explain: bool = True
) -> JobMessage | Unchanged:
    """Start a dead or cancelled job over: status `queued`, a fresh attempt budget, `retries` + 1.

    Attempts keep counting (the job's code sees attempt 3 after two that failed): the budget is
    fresh because the record's max_attempts becomes attempts so far + the job's own budget
    (`attempt_budget`, its max_attempts when first retried), and the claim counts the record's.
    Returns that message, or Unchanged with the record as it is (`explain`), or Unchanged({}) (not `explain`:
    a bulk retry, which reads only the status of the few it was refused). The record keeps its place in
    the listing and its first enqueue time; it expires like a finished one if its message never runs.

    The record says `retry_unsent` until `mark_retry_sent`: a retry of a job left `queued` with its
    message unsent (the send failed, or its request died) sends it; one whose message was sent does not.
    """
    names = [f":s{i}" for i in range(len(statuses))]
    item = _update_unless_refused(
        job_id,
        explain=explain,
        UpdateExpression=(
            "SET #status = :queued, retries = if_not_exists(retries, :zero) + :one, retried_at = :now, "
            "retry_unsent = :now, "
            "attempt_budget = if_not_exists(attempt_budget, max_attempts), "
            # the claim counts the record's max_attempts: the fresh budget starts from here
            "max_attempts = if_not_exists(attempts, :zero) + if_not_exists(attempt_budget, max_attempts), "
            "expires_at = :ttl "
            "REMOVE finished_at, cancelled_at, last_error, result_json, lease_until, attempt_token, claimed_by"
        ),
        ConditionExpression=(
            f"#tenant = :owner AND #status IN ({', '.join(names)}) AND attribute_exists(payload_json)"
        ),
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues={name: {"S": status} for name, status in zip(names, statuses, strict=True)}
        | {
            ":queued": {"S": Status.QUEUED},
            ":zero": job_items.n(0),
            ":one": job_items.n(1),
            ":owner": {"S": tenant},
            ":now": job_items.n(now),
            ":ttl": job_items.n(job_items.expires_at(now)),
        },
    )
    if isinstance(item, Unchanged):
        return item
    return job_items.message_from_item(item, enqueued_at=now)


def retry_unsent(item: dict[str, Any]) -> float | None:
    """When the retry that queued this record ran, if its message is not known to have been sent."""
    return job_items.as_float(item, "retry_unsent")


def mark_retry_sent(job_id: str, retried_at: float) -> bool:
    """The retry of `retried_at` sent its message: later retries of the queued job send nothing.
    False if the record moved on already (claimed, cancelled, retried again)."""
    return job_items.conditional(
        Key=job_items.key(job_id),
        UpdateExpression="REMOVE retry_unsent",
        ConditionExpression="#status = :queued AND retry_unsent = :at",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":queued": {"S": Status.QUEUED}, ":at": job_items.n(retried_at)},
    )
