"""Job records in DynamoDB, written only with conditional writes: reads, and the outcomes of attempts.

Every status write names the attempt that makes it (a random token set at its claim:
shared/store/jobs/job_claims.py), so a duplicate delivery, or an attempt whose lease expired and was taken
over, cannot record a second outcome. Job items are read and written through a low-level client (DAX
speaks only that dialect; see docs/decisions/status-cache.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.model.message import JobMessage
from shared.model.outcome import OutcomeMessage, Started, result_json
from shared.model.record import JobRecord
from shared.model.states import Status
from shared.store import keys, table
from shared.store.jobs import job_items

if TYPE_CHECKING:  # imported where a dead letter is recorded: the API reads records, never claims (its cold start)
    from shared.store.jobs import job_claims


def get(job_id: str, *, consistent: bool = False, single_attempt: bool = False) -> JobRecord | None:
    """The job's record (its tenant in `tenant`), or None if no worker has seen the job.

    `consistent`: the table's own answer, past the status cache (DAX passes a strongly consistent read
    through, neither answering it from its cache nor caching it): a callback's send reads the record its
    parent's outcome wrote a moment ago; a status poll rechecks a miss that may be stale."""
    if consistent:
        item = job_items.read_item(job_id, single_attempt=single_attempt)
    else:
        jobs = job_items.jobs_client(single_attempt)
        item = jobs.get_item(TableName=table.name(), Key=job_items.key(job_id)).get("Item")
    return job_items.record_from_item(item) if item else None


def mark_callback_sent(job_id: str, kind: str, callback_id: str, *, single_attempt: bool = False) -> None:
    """The job's `kind` callback (on_success, on_failure) is enqueued: no later delivery sends it again."""
    name = job_items.callback_sent_attribute(kind)
    job_items.conditional(
        single_attempt=single_attempt,
        Key=job_items.key(job_id),
        UpdateExpression=f"SET {name} = :id",
        ConditionExpression="attribute_exists(pk)",
        ExpressionAttributeValues={":id": {"S": callback_id}},
    )


def record_skipped(
    message: JobMessage, reason: str, skipped_for: str | None, now: float, *, single_attempt: bool = False
) -> bool:
    """Record the job `message` as `skipped` with no attempt made, `reason` naming the job `skipped_for` (a later
    job of its debounce key, its unique key's holder). False if it has a record already, other than the one a job
    that waited unclaimed leaves (`queued`, saying what it waited for, no attempt made): it is left as it is."""
    item = job_items.skipped_item(message, now, reason, skipped_for)
    return job_items.conditional(
        put=True,
        single_attempt=single_attempt,
        Item=item,
        ConditionExpression="attribute_not_exists(pk) OR (#status = :queued AND #tenant = :tenant AND "
        f"attribute_exists({job_items.QUEUED_WAITING_FOR}) AND attribute_not_exists(attempts))",
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues={":queued": {"S": Status.QUEUED}, ":tenant": {"S": message.tenant}},
    )


def _finish(
    job_id: str, token: str, outcome: str, sets: list[str], values: dict[str, Any], *, single_attempt: bool = False
) -> bool:
    """Apply an attempt's outcome if that attempt still holds the job. False if it lost it.

    The same attempt may apply the same outcome again: a write DynamoDB applied but whose answer
    was lost is retried by botocore, and must succeed (not fail its condition) so that it passes
    through the status cache and leaves the cache holding the outcome, not the stale `running`.
    """
    return job_items.conditional(
        single_attempt=single_attempt,
        Key=job_items.key(job_id),
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE lease_until",
        ConditionExpression="attempt_token = :token AND #status IN (:running, " + outcome + ")",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":token": {"S": token}, ":running": {"S": Status.RUNNING}} | values,
    )


def _started(started: Started | None) -> tuple[list[str], dict[str, Any]]:
    if started is None:
        return [], {}
    sets = ["started_at = :started"] + (["first_started_at = :started"] if started.first_attempt else [])
    return sets, {":started": job_items.n(started.at)}


def complete(
    job_id: str, token: str, result: Any, now: float, *, started: Started | None = None, single_attempt: bool = False
) -> bool:
    """`single_attempt`: no botocore retries, for a caller whose fallback (carrying the outcome in a
    message) is cheaper than waiting out the backoff while the store fails."""
    started_sets, started_values = _started(started)
    return _finish(
        job_id,
        token,
        ":succeeded",
        ["#status = :succeeded", "result_json = :result", "finished_at = :now", "expires_at = :ttl", *started_sets],
        {
            ":succeeded": {"S": Status.SUCCEEDED},
            ":result": {"S": result_json(result)},
            ":now": job_items.n(now),
            ":ttl": job_items.n(job_items.expires_at(now)),
        }
        | started_values,
        single_attempt=single_attempt,
    )


def record_failure(job_id: str, token: str, error: str, now: float, *, started: Started | None = None) -> bool:
    """The attempt holding the claim `token` failed with `error`, with attempts left: the job is `failed`,
    waiting for its retry. False if that attempt no longer holds the job."""
    started_sets, started_values = _started(started)
    return _finish(
        job_id,
        token,
        ":failed",
        ["#status = :failed", "last_error = :error", *started_sets],
        {":failed": {"S": Status.FAILED}, ":error": {"S": error[:2000]}} | started_values,
    )


def record_dead(
    job: JobMessage | dict[str, Any],
    reason: str,
    now: float,
    *,
    token: str | None = None,
    started: Started | None = None,
) -> bool:
    """Record the job `dead` with `reason`, in one conditional write; False if its condition fails.

    Who ends the job decides the condition:
    - `token`: the attempt holding that claim ends it (its last failure, or a result or an outcome the
      store cannot hold); written if that attempt still holds the job. `started`: when its code started.
    - a JobMessage without a token: the claim found every attempt died without an outcome (worker
      crashes); written while the job is running or failed.
    - a dict: the valid fields of a message that cannot run (at least a verified `id` and `tenant`);
      nothing ran. Written only where there is no record yet: a job already known keeps its record
      (its own message is still on its way), and only the bad message goes to the DLQ.
    """
    if isinstance(job, dict):
        return _record_unrunnable(job, reason, now)
    sets = ["#status = :dead", "last_error = :error", "finished_at = :now", "expires_at = :ttl"]
    values = {
        ":dead": {"S": Status.DEAD},
        ":error": {"S": reason[:2000]},
        ":now": job_items.n(now),
        ":ttl": job_items.n(job_items.expires_at(now)),
    }
    if token is not None:
        started_sets, started_values = _started(started)
        return _finish(job.id, token, ":dead", sets + started_sets, values | started_values)
    return job_items.conditional(
        Key=job_items.key(job.id),
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE lease_until",
        ConditionExpression="#status IN (:running, :failed)",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues=values | {":running": {"S": Status.RUNNING}, ":failed": {"S": Status.FAILED}},
    )


@dataclass(frozen=True)
class DeadNow:
    """Recorded `dead` by this write."""

    retries: int = 0  # the record's: which run of the job ended


def record_dead_lettered(
    message: JobMessage, reason: str, now: float, *, single_attempt: bool = False
) -> DeadNow | job_claims.Finished | job_claims.HeldElsewhere | job_claims.Foreign:
    """A job whose message reached the backstop with no outcome recorded (shared/worker/complete/backstop.py): `dead`
    with `reason`, in one conditional write, unless it has finished (Finished: the message was one left
    over) or an attempt holds a live lease on it (HeldElsewhere: that attempt records its outcome). Written
    where there is no record too, with what the message says of its job (GET, the listing and a retry see
    it as any dead job), and over a `queued` or `failed` one, or a `running` one whose lease has ended."""
    from shared.store.jobs import job_claims

    sets, values = job_items.job_fields(message, None)
    values |= {
        ":dead": {"S": Status.DEAD},
        ":queued": {"S": Status.QUEUED},
        ":running": {"S": Status.RUNNING},
        ":failed": {"S": Status.FAILED},
        ":waiting": {"S": Status.WAITING},
        ":error": {"S": reason[:2000]},
        ":zero": job_items.n(0),
        ":now": job_items.n(now),
        ":ttl": job_items.n(job_items.expires_at(now)),
    }
    sets += [
        "#status = :dead",
        "attempts = if_not_exists(attempts, :zero)",
        "last_error = :error",
        "finished_at = :now",
        "expires_at = :ttl",
    ]
    answer = job_items.write(
        single_attempt=single_attempt,
        Key=job_items.key(message.id),
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE lease_until",
        ConditionExpression=f"attribute_not_exists(pk) OR (#tenant = :tenant AND {job_claims.TAKEABLE})",
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues=values,
        ReturnValues="ALL_NEW",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    if isinstance(answer, job_items.ConditionFailed):
        old = job_items.old_item(answer, message.id)
        if not old:
            # There for the condition, gone since.
            return job_claims.HeldElsewhere(by_this_message=False, lease_left_seconds=0)
        if job_items.as_str(old, "tenant") != message.tenant:
            return job_claims.Foreign()
        status = Status(old["status"]["S"])
        if status.finished:
            return job_claims.Finished(status, job_items.as_int(old, "retries") or 0)
        return job_claims.HeldElsewhere(
            by_this_message=False, lease_left_seconds=max((job_items.as_float(old, "lease_until") or now) - now, 0)
        )
    return DeadNow(job_items.as_int(answer["Attributes"], "retries") or 0)


def record_carried(outcome: OutcomeMessage, message_id: str, *, single_attempt: bool = False) -> bool:
    """Record an attempt that ran without a claim while the store failed (shared/worker/admit/unclaimed.py), from the
    outcome message `message_id` that carried it here. False: the store already had an outcome.

    `succeeded`/`dead`: written unless the job is finished already (of two outcomes, the first
    recorded wins), so a claimed attempt running meanwhile loses its claim and records nothing; a job
    queued again by a retry or a redrive is not finished, and its new message's unclaimed run counts.
    `failed`: written only where there is no record yet; the message then runs the job's retry.
    The same message finds it written already when botocore retried a write whose answer was lost: True.
    `message_id` may also be the original job message's, when its unclaimed run records directly.
    """
    message = outcome.job
    token = f"carried-{message_id}"
    job_sets, values = job_items.job_fields(message, outcome.started_at)
    values |= {
        ":outcome": {"S": outcome.status},
        ":zero": job_items.n(0),
        ":one": job_items.n(1),
        ":started": job_items.n(outcome.started_at),
        ":token": {"S": token},
        ":message": {"S": message_id},
    }
    sets = [
        "#status = :outcome",
        "attempts = if_not_exists(attempts, :zero) + :one",
        "attempt_token = :token",
        "claimed_by = :message",
        "started_at = :started",
        *job_sets,
    ]
    if outcome.status is Status.SUCCEEDED:
        sets.append("result_json = :result")
        values[":result"] = {"S": result_json(outcome.result)}
    else:
        sets.append("last_error = :error")
        values[":error"] = {"S": (outcome.error or "")[:2000]}
    condition = "attribute_not_exists(pk)"
    if outcome.status.finished:
        sets += ["finished_at = :finished", "expires_at = :ttl"]
        values |= {
            ":finished": job_items.n(outcome.finished_at),
            ":ttl": job_items.n(job_items.expires_at(outcome.finished_at)),
            ":queued": {"S": Status.QUEUED},
            ":running": {"S": Status.RUNNING},
            ":failed": {"S": Status.FAILED},
        }
        # `queued`: a retried or redriven job's record, whose new message ran unclaimed in a store blip.
        condition += " OR (#tenant = :tenant AND #status IN (:queued, :running, :failed))"
    answer = job_items.write(
        single_attempt=single_attempt,
        Key=job_items.key(message.id),
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE lease_until",
        ConditionExpression=condition,
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues=values,
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    if isinstance(answer, job_items.ConditionFailed):
        old = job_items.old_item(answer, message.id)
        return job_items.as_str(old, "attempt_token") == token and job_items.as_str(old, "status") == outcome.status
    return True


def _record_unrunnable(job: dict[str, Any], reason: str, now: float) -> bool:
    """`record_dead` of a message that cannot run: a record of what was valid in it, where there is none."""
    job_id, tenant = job["id"], job["tenant"]
    enqueued_at = job.get("enqueued_at", now)
    item: dict[str, Any] = {
        **job_items.key(job_id),
        "status": {"S": Status.DEAD},
        "tenant": {"S": tenant},
        "attempts": job_items.n(0),
        "last_error": {"S": reason[:2000]},
        "enqueued_at": job_items.n(enqueued_at),
        "finished_at": job_items.n(now),
        "expires_at": job_items.n(job_items.expires_at(now)),
        **job_items.index_attributes(tenant, enqueued_at, job_id),
    }
    if "type" in job:
        item["job_type"] = {"S": job["type"]}
    if "payload" in job:
        item["payload_json"] = job_items.payload_json(job["payload"])
    if "max_attempts" in job:
        item["max_attempts"] = job_items.n(job["max_attempts"])
    if job.get("timeout_seconds") is not None:
        item["timeout_seconds"] = job_items.n(job["timeout_seconds"])
    if job.get("schedule"):
        item["schedule_name"] = {"S": job["schedule"]}
        if job.get("scheduled_for"):  # an index key is never empty
            item |= {
                "scheduled_for": {"S": job["scheduled_for"]},
                "gsi1pk": {"S": keys.runs_partition(tenant, job["schedule"])},
                "gsi1sk": {"S": job["scheduled_for"]},
            }
    return job_items.conditional(put=True, Item=item, ConditionExpression="attribute_not_exists(pk)")
