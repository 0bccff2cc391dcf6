"""Job records in DynamoDB, written only with conditional writes.

Every status write names the attempt that makes it (a random token set at claim),
so a duplicate delivery, or an attempt whose lease expired and was taken over,
cannot record a second outcome. Job items are read and written through a
low-level client (DAX speaks only that dialect; see docs/decisions/status-cache.md).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from shared.model import JobMessage, JobRecord, OutcomeMessage, Overlap, Started, Status, Trigger, result_json
from shared.store import job_items, keys, schedule_runs, table


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
    """A durable job waiting for a time not yet come, or for a resolution (`resume_at` None): a wake message
    early by a hair (two machines' clocks) comes back for the rest; any other is stale, acknowledged unrun.
    `by_this_message`: the delivery whose attempt suspended it."""

    resume_in_seconds: float | None
    by_this_message: bool


ClaimResult = Claimed | Finished | HeldElsewhere | Exhausted | Contended | Foreign | Asleep

# A job another delivery may take over: waiting (queued, or failed with its retry due), held by a lease
# that has ended, or a durable job whose timer has come (a sleep's end, a wait's timeout).
_TAKEABLE = (
    "(#status IN (:queued, :failed) OR (#status = :running AND lease_until < :now)"
    " OR (#status = :waiting AND resume_at <= :now))"
)


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


def _job_fields(message: JobMessage, started_at: float | None) -> tuple[list[str], dict[str, Any]]:
    """SET clauses (and values) recording what the message says of its job, written by every attempt:
    its tenant and type, what a retry needs to run it again, and its place in the tenant's listing.
    `started_at`: when its attempt started (None: none did)."""
    started = {} if started_at is None else {"first_started_at": job_items.n(started_at)}
    first_seen, values = job_items.if_not_exists(
        job_items.index_attributes(message.tenant, message.enqueued_at, message.id)
        | {"payload_json": job_items.payload_json(message.payload)}
        | started
        | job_items.relations(message)
        | _request(message)
    )
    values |= {
        ":tenant": {"S": message.tenant},
        ":type": {"S": message.type},
        ":max": job_items.n(message.max_attempts),
        ":enqueued": job_items.n(message.enqueued_at),
    }
    sets = [
        "#tenant = :tenant",
        "job_type = :type",
        "max_attempts = if_not_exists(max_attempts, :max)",
        "enqueued_at = if_not_exists(enqueued_at, :enqueued)",
        *first_seen,
    ]
    if message.timeout_seconds is not None:
        values[":timeout"] = job_items.n(message.timeout_seconds)
        sets.append("timeout_seconds = :timeout")
    if message.concurrency is not None:
        values |= {":ckey": {"S": message.concurrency.key}, ":climit": job_items.n(message.concurrency.limit)}
        sets += ["concurrency_key = :ckey", "concurrency_limit = :climit"]
    if message.schedule:
        values |= {
            ":schedule": {"S": message.schedule},
            ":scheduled_for": {"S": message.scheduled_for or ""},
            ":runs_key": {"S": keys.runs_partition(message.tenant, message.schedule)},
        }
        sets += [
            "schedule_name = :schedule",
            "scheduled_for = :scheduled_for",
            "gsi1pk = :runs_key",
            "gsi1sk = :scheduled_for",
        ]
        if message.trigger:
            values[":trigger"] = {"S": message.trigger}
            sets.append("run_trigger = :trigger")
    return sets, values


def _request(message: JobMessage) -> dict[str, dict[str, str]]:
    """A keyed job's request fingerprint, as the record keeps it (written once, by the first message)."""
    return {job_items.REQUEST: {"S": message.request}} if message.request else {}


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
    job_sets, values = _job_fields(message, now)
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
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE resume_at, waiting_step",
        # An existing record's own max_attempts counts (the first message's, if a later one
        # with the same idempotency key asks for another number; a retry raises it).
        ConditionExpression=(
            "attribute_not_exists(pk) OR (#tenant = :tenant "
            f"AND (attribute_not_exists(attempts) OR attempts < max_attempts) AND {_TAKEABLE}"
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
        | _request(message)
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
) -> DeadNow | Finished | HeldElsewhere | Foreign:
    """A job whose message reached the backstop with no outcome recorded (shared/worker/backstop.py): `dead`
    with `reason`, in one conditional write, unless it has finished (Finished: the message was one left
    over) or an attempt holds a live lease on it (HeldElsewhere: that attempt records its outcome). Written
    where there is no record too, with what the message says of its job (GET, the listing and a retry see
    it as any dead job), and over a `queued` or `failed` one, or a `running` one whose lease has ended."""
    sets, values = _job_fields(message, None)
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
        ConditionExpression=f"attribute_not_exists(pk) OR (#tenant = :tenant AND {_TAKEABLE})",
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues=values,
        ReturnValues="ALL_NEW",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    if isinstance(answer, job_items.ConditionFailed):
        old = job_items.old_item(answer, message.id)
        if not old:
            return HeldElsewhere(by_this_message=False, lease_left_seconds=0)  # there for the condition, gone since
        if job_items.as_str(old, "tenant") != message.tenant:
            return Foreign()
        status = Status(old["status"]["S"])
        if status.finished:
            return Finished(status, job_items.as_int(old, "retries") or 0)
        return HeldElsewhere(
            by_this_message=False, lease_left_seconds=max((job_items.as_float(old, "lease_until") or now) - now, 0)
        )
    return DeadNow(job_items.as_int(answer["Attributes"], "retries") or 0)


def release(job_id: str, token: str) -> bool:
    """Undo a claim whose attempt never started (shared/worker/claim_ahead.py claims a batch's jobs ahead): the job
    is queued again, the attempt not counted. False if that claim no longer holds the job."""
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


def record_carried(outcome: OutcomeMessage, message_id: str, *, single_attempt: bool = False) -> bool:
    """Record an attempt that ran without a claim while the store failed (shared/worker/unclaimed.py), from the
    outcome message `message_id` that carried it here. False: the store already had an outcome.

    `succeeded`/`dead`: written unless the job is finished already (of two outcomes, the first
    recorded wins), so a claimed attempt running meanwhile loses its claim and records nothing.
    `failed`: written only where there is no record yet; the message then runs the job's retry.
    The same message finds it written already when botocore retried a write whose answer was lost: True.
    `message_id` may also be the original job message's, when its unclaimed run records directly.
    """
    message = outcome.job
    token = f"carried-{message_id}"
    job_sets, values = _job_fields(message, outcome.started_at)
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
            ":running": {"S": Status.RUNNING},
            ":failed": {"S": Status.FAILED},
        }
        condition += " OR (#tenant = :tenant AND #status IN (:running, :failed))"
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
