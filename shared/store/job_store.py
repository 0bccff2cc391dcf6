"""Job records in DynamoDB, written only with conditional writes.

Every status write names the attempt that makes it (a random token set at claim),
so a duplicate delivery, or an attempt whose lease expired and was taken over,
cannot record a second outcome. Job items are read and written through a
low-level client (DAX speaks only that dialect; see docs/architecture.md).
"""

from __future__ import annotations

import json
import secrets
import zlib
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from shared import environment, settings
from shared.aws.clients import aws_error_code, client
from shared.model import JobMessage, JobRecord, OutcomeMessage, Status
from shared.store import keys
from shared.store.table_schema import JOBS_INDEX

_DAY = 86_400


def _table() -> str:
    return environment.current().table


def _key(job_id: str) -> dict[str, Any]:
    return keys.item_key(keys.job_key(job_id))


def index_sort_key(enqueued_at: float, job_id: str) -> str:
    """Where a job sits in its tenant's listing: enqueue time in ms (13 digits, so it sorts as text), then id."""
    # Clamped to 13 digits (years 1970-2286), so any time a query names still sorts in order as text.
    millis = min(max(int(enqueued_at * 1000), 0), 10**13 - 1)
    return f"{millis:013d}#{job_id}"


def index_shard(job_id: str) -> int:
    """Which of the tenant's listing partitions a job is written to (stable, spread evenly by id)."""
    return zlib.crc32(job_id.encode()) % settings.JOBS_INDEX_SHARDS


def index_partition(tenant: str, shard: int) -> str:
    return keys.jobs_index_partition(tenant, shard)


def index_attributes(tenant: str, enqueued_at: float, job_id: str) -> dict[str, dict[str, str]]:
    """The listing index's key (gsi2), written by every write that may create a job record.

    A tenant's jobs are spread over settings.JOBS_INDEX_SHARDS partitions: an index partition takes
    at most 1,000 writes/s, and a time-ordered sort key sends all of a tenant's new writes to one.
    """
    return {
        JOBS_INDEX.partition_key: {"S": index_partition(tenant, index_shard(job_id))},
        JOBS_INDEX.sort_key: {"S": index_sort_key(enqueued_at, job_id)},
    }


def _if_not_exists(values: dict[str, dict[str, str]]) -> tuple[list[str], dict[str, Any]]:
    """SET clauses that write each attribute only if the record lacks it, and their values."""
    return [f"{name} = if_not_exists({name}, :{name})" for name in values], {f":{k}": v for k, v in values.items()}


def _jobs_client(single_attempt: bool = False) -> Any:
    """The client job items go through: the status cache where there is one."""
    from shared.aws.status_cache import jobs_client

    return jobs_client(single_attempt)


def prepare_clients() -> None:
    """Create the clients job items go through and make one read with them (the worker's init phase):
    a client's first request resolves its endpoint and builds its serializers, ~0.1 s on AWS and up to
    ~1 s on a busy 2-core machine, which would otherwise fall on the first job's clock."""
    _jobs_client(single_attempt=False)
    _jobs_client(single_attempt=True).get_item(TableName=_table(), Key=_key("init-phase-read"))


@dataclass(frozen=True)
class _ConditionFailed:
    """A conditional write's condition failed; `item` is the record the failure returned ({} if none)."""

    item: dict[str, Any]


def _write(*, put: bool = False, single_attempt: bool = False, **params: Any) -> dict[str, Any] | _ConditionFailed:
    """One conditional write of a job item (UpdateItem, or PutItem if `put`): DynamoDB's answer, or
    _ConditionFailed. `single_attempt`: no botocore retries (see `claim`)."""
    jobs = _jobs_client(single_attempt)
    try:
        return (jobs.put_item if put else jobs.update_item)(TableName=_table(), **params)
    except ClientError as error:
        if aws_error_code(error) != "ConditionalCheckFailedException":
            raise
        return _ConditionFailed(error.response.get("Item") or {})


def _conditional(**params: Any) -> bool:
    """A conditional write (as `_write`): False if its condition failed."""
    return not isinstance(_write(**params), _ConditionFailed)


def _old_item(failed: _ConditionFailed, job_id: str) -> dict[str, Any]:
    """The record a failed condition met: as the failure returned it (ALL_OLD), else read again."""
    return failed.item or _read_item(job_id)


@dataclass(frozen=True)
class Claimed:
    attempt: int
    token: str
    max_attempts: int  # the record's: the first message of a job sets it (an idempotency key's first request)


@dataclass(frozen=True)
class Finished:
    """Succeeded, dead or cancelled already: a duplicate delivery (or a cancelled job's), acknowledged unrun."""


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


ClaimResult = Claimed | Finished | HeldElsewhere | Exhausted | Contended | Foreign


def _n(value: float | int) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def _as_float(item: dict[str, Any], name: str) -> float | None:
    return float(item[name]["N"]) if name in item else None


def _as_str(item: dict[str, Any], name: str) -> str | None:
    return item[name]["S"] if name in item else None


def _as_int(item: dict[str, Any], name: str) -> int | None:
    return int(item[name]["N"]) if name in item else None


def record_from_item(item: dict[str, Any]) -> JobRecord:
    result_json = _as_str(item, "result_json")
    payload_json = _as_str(item, "payload_json")
    recorded = {"payload": json.loads(payload_json)} if payload_json is not None else {}
    return JobRecord(
        id=keys.job_id_of(item["pk"]["S"]),
        status=Status(item["status"]["S"]),
        type=_as_str(item, "job_type"),
        attempts=int(item.get("attempts", {"N": "0"})["N"]),
        result=json.loads(result_json) if result_json is not None else None,
        error=_as_str(item, "last_error"),
        enqueued_at=_as_float(item, "enqueued_at"),
        started_at=_as_float(item, "started_at"),
        finished_at=_as_float(item, "finished_at"),
        schedule=_as_str(item, "schedule_name"),
        scheduled_for=_as_str(item, "scheduled_for"),
        max_attempts=_as_int(item, "max_attempts"),
        timeout_seconds=_as_int(item, "timeout_seconds"),
        cancelled_at=_as_float(item, "cancelled_at"),
        retries=_as_int(item, "retries") or 0,
        tenant=_as_str(item, "tenant") or "",
        **recorded,
    )


def get(job_id: str) -> JobRecord | None:
    """The job's record (its tenant in `tenant`), or None if no worker has seen the job."""
    item = _jobs_client().get_item(TableName=_table(), Key=_key(job_id)).get("Item")
    return record_from_item(item) if item else None


def _payload_json(payload: Any) -> dict[str, str]:
    return {"S": json.dumps(payload, separators=(",", ":"))}


def _job_fields(message: JobMessage, started_at: float) -> tuple[list[str], dict[str, Any]]:
    """SET clauses (and values) recording what the message says of its job, written by every attempt:
    its tenant and type, what a retry needs to run it again, and its place in the tenant's listing."""
    first_seen, values = _if_not_exists(
        index_attributes(message.tenant, message.enqueued_at, message.id)
        | {"payload_json": _payload_json(message.payload), "first_started_at": _n(started_at)}
    )
    values |= {
        ":tenant": {"S": message.tenant},
        ":type": {"S": message.type},
        ":max": _n(message.max_attempts),
        ":enqueued": _n(message.enqueued_at),
    }
    sets = [
        "#tenant = :tenant",
        "job_type = :type",
        "max_attempts = if_not_exists(max_attempts, :max)",
        "enqueued_at = if_not_exists(enqueued_at, :enqueued)",
        *first_seen,
    ]
    if message.timeout_seconds is not None:
        values[":timeout"] = _n(message.timeout_seconds)
        sets.append("timeout_seconds = :timeout")
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
    return sets, values


def claim(
    message: JobMessage, message_id: str, now: float, lease_seconds: int, *, single_attempt: bool = False
) -> ClaimResult:
    """Start an attempt: the job is new, queued again by a retry, failed (retry due) or its holder's lease expired.

    `single_attempt`: no botocore retries, for a delivery that runs without the claim if this one fails.

    The record keeps what rebuilds the message (payload_json, written once) and its tenant:
    a claim never changes a record's tenant, so a message naming another tenant cannot take it over.
    """
    token = secrets.token_hex(8)
    job_sets, values = _job_fields(message, now)
    values |= {
        ":queued": {"S": Status.QUEUED},
        ":running": {"S": Status.RUNNING},
        ":failed": {"S": Status.FAILED},
        ":zero": _n(0),
        ":one": _n(1),
        ":now": _n(now),
        ":lease": _n(now + lease_seconds),
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
    answer = _write(
        single_attempt=single_attempt,
        Key=_key(message.id),
        UpdateExpression="SET " + ", ".join(sets),
        # An existing record's own max_attempts counts (the first message's, if a later one
        # with the same idempotency key asks for another number; a retry raises it).
        ConditionExpression=(
            "attribute_not_exists(pk) OR (#tenant = :tenant "
            "AND (attribute_not_exists(attempts) OR attempts < max_attempts) "
            "AND (#status IN (:queued, :failed) OR (#status = :running AND lease_until < :now)))"
        ),
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues=values,
        ReturnValues="ALL_NEW",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    if isinstance(answer, _ConditionFailed):
        old = _old_item(answer, message.id)
        if old.get("status", {}).get("S") == Status.CANCELLED and "payload_json" not in old:
            _record_cancelled_message(message)
        return _why_not_claimed(old, message, message_id, now)
    item = answer["Attributes"]
    return Claimed(attempt=int(item["attempts"]["N"]), token=token, max_attempts=int(item["max_attempts"]["N"]))


def _record_cancelled_message(message: JobMessage) -> None:
    """A job cancelled before any worker saw it: keep its message's content, so it can be retried."""
    known = {
        "payload_json": _payload_json(message.payload),
        "job_type": {"S": message.type},
        "max_attempts": _n(message.max_attempts),
    }
    if message.schedule:
        known |= {"schedule_name": {"S": message.schedule}, "scheduled_for": {"S": message.scheduled_for or ""}}
    sets, values = _if_not_exists(known)
    # Any other failure raises: the delivery comes back and records it then; a retry answers 409 until it has.
    _conditional(
        Key=_key(message.id),
        UpdateExpression="SET " + ", ".join(sets),
        ConditionExpression="#status = :cancelled AND #tenant = :tenant",
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues=values | {":cancelled": {"S": Status.CANCELLED}, ":tenant": {"S": message.tenant}},
    )


def _read_item(job_id: str) -> dict[str, Any]:
    # Only for stores that do not return ALL_OLD on a failed condition.
    return _jobs_client().get_item(TableName=_table(), Key=_key(job_id), ConsistentRead=True).get("Item") or {}


def _why_not_claimed(old: dict[str, Any], message: JobMessage, message_id: str, now: float) -> ClaimResult:
    """Why the claim's condition failed, from the record as it was then (or re-read)."""
    if not old:
        return Contended()  # the record was there for the condition, gone for the re-read
    if _as_str(old, "tenant") != message.tenant:
        return Foreign()
    status = Status(old["status"]["S"])
    if status.finished:
        return Finished()
    lease_left = (_as_float(old, "lease_until") or 0) - now
    if status is Status.RUNNING and lease_left >= 0:
        return HeldElsewhere(by_this_message=_as_str(old, "claimed_by") == message_id, lease_left_seconds=lease_left)
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
    return _conditional(
        single_attempt=single_attempt,
        Key=_key(job_id),
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE lease_until",
        ConditionExpression="attempt_token = :token AND #status IN (:running, " + outcome + ")",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":token": {"S": token}, ":running": {"S": Status.RUNNING}} | values,
    )


def _expires_at(now: float) -> int:
    return int(now) + settings.FINISHED_JOB_TTL_DAYS * _DAY


def result_json(result: Any) -> str:
    """A job's result as stored (what GET shows): JSON, anything else as its str()."""
    return json.dumps(result, default=str)


@dataclass(frozen=True)
class Started:
    """When an attempt's code really started (its claim may have come earlier: a batch's jobs are claimed
    together, shared/worker/claim_ahead.py), and whether it was the job's first attempt."""

    at: float
    first_attempt: bool = False


def _started(started: Started | None) -> tuple[list[str], dict[str, Any]]:
    if started is None:
        return [], {}
    sets = ["started_at = :started"] + (["first_started_at = :started"] if started.first_attempt else [])
    return sets, {":started": _n(started.at)}


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
            ":now": _n(now),
            ":ttl": _n(_expires_at(now)),
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
        ":now": _n(now),
        ":ttl": _n(_expires_at(now)),
    }
    if token is not None:
        started_sets, started_values = _started(started)
        return _finish(job.id, token, ":dead", sets + started_sets, values | started_values)
    return _conditional(
        Key=_key(job.id),
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE lease_until",
        ConditionExpression="#status IN (:running, :failed)",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues=values | {":running": {"S": Status.RUNNING}, ":failed": {"S": Status.FAILED}},
    )


def release(job_id: str, token: str) -> bool:
    """Undo a claim whose attempt never started (shared/worker/claim_ahead.py claims a batch's jobs ahead): the job
    is queued again, the attempt not counted. False if that claim no longer holds the job."""
    return _update_held(
        job_id,
        token,
        "SET #status = :queued, attempts = attempts - :one REMOVE lease_until, attempt_token",
        {":queued": {"S": Status.QUEUED}, ":one": _n(1)},
    )


def extend_lease(job_id: str, token: str, until: float) -> bool:
    """Hold the claim `token` until `until` (a job claimed ahead of its turn, about to start). False if
    that claim no longer holds the job: its lease ran out and another delivery took it, or it was cancelled.
    One attempt: the caller runs on the lease it has if the store fails."""
    return _update_held(job_id, token, "SET lease_until = :until", {":until": _n(until)})


def _update_held(job_id: str, token: str, update: str, values: dict[str, Any]) -> bool:
    """Apply `update` (one attempt) if the claim `token` still holds the job, running. False if it does not."""
    return _conditional(
        single_attempt=True,
        Key=_key(job_id),
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
        ":zero": _n(0),
        ":one": _n(1),
        ":started": _n(outcome.started_at),
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
            ":finished": _n(outcome.finished_at),
            ":ttl": _n(_expires_at(outcome.finished_at)),
            ":running": {"S": Status.RUNNING},
            ":failed": {"S": Status.FAILED},
        }
        condition += " OR (#tenant = :tenant AND #status IN (:running, :failed))"
    answer = _write(
        single_attempt=single_attempt,
        Key=_key(message.id),
        UpdateExpression="SET " + ", ".join(sets) + " REMOVE lease_until",
        ConditionExpression=condition,
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues=values,
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    if isinstance(answer, _ConditionFailed):
        old = _old_item(answer, message.id)
        return _as_str(old, "attempt_token") == token and _as_str(old, "status") == outcome.status
    return True


def _record_unrunnable(job: dict[str, Any], reason: str, now: float) -> bool:
    """`record_dead` of a message that cannot run: a record of what was valid in it, where there is none."""
    job_id, tenant = job["id"], job["tenant"]
    enqueued_at = job.get("enqueued_at", now)
    item: dict[str, Any] = {
        **_key(job_id),
        "status": {"S": Status.DEAD},
        "tenant": {"S": tenant},
        "attempts": _n(0),
        "last_error": {"S": reason[:2000]},
        "enqueued_at": _n(enqueued_at),
        "finished_at": _n(now),
        "expires_at": _n(_expires_at(now)),
        **index_attributes(tenant, enqueued_at, job_id),
    }
    if "type" in job:
        item["job_type"] = {"S": job["type"]}
    if "payload" in job:
        item["payload_json"] = _payload_json(job["payload"])
    if "max_attempts" in job:
        item["max_attempts"] = _n(job["max_attempts"])
    if job.get("timeout_seconds") is not None:
        item["timeout_seconds"] = _n(job["timeout_seconds"])
    if job.get("schedule"):
        item["schedule_name"] = {"S": job["schedule"]}
        if job.get("scheduled_for"):  # an index key is never empty
            item |= {
                "scheduled_for": {"S": job["scheduled_for"]},
                "gsi1pk": {"S": keys.runs_partition(tenant, job["schedule"])},
                "gsi1sk": {"S": job["scheduled_for"]},
            }
    return _conditional(put=True, Item=item, ConditionExpression="attribute_not_exists(pk)")


# Cancel and retry, each one conditional write -------------------------------------------


@dataclass(frozen=True)
class Refused:
    """The write's condition failed; `item` is the record as it is now ({} if there is none)."""

    item: dict[str, Any]


def _update_unless_refused(job_id: str, **params: Any) -> dict[str, Any] | Refused:
    """A conditional UpdateItem returning the new item, or Refused with the record as it is."""
    answer = _write(Key=_key(job_id), ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD", **params)
    if isinstance(answer, _ConditionFailed):
        return Refused(_old_item(answer, job_id))
    return answer["Attributes"]


def cancel(
    job_id: str, tenant: str, enqueued_at: float, now: float, known: JobMessage | None = None
) -> JobRecord | Refused:
    """Mark the job cancelled if it has not started: no record yet, queued by a retry, failed and
    waiting for its retry, or `running` under a lease that expired (its attempt died). A claim is a
    conditional write on the same item, so of a claim and a cancel racing, exactly one succeeds.

    `known`: the job's message where the caller has it (a far-future job's schedule), so the
    cancelled job can be retried at once; otherwise the worker records it when the message arrives.
    """
    first_seen: dict[str, dict[str, str]] = {"tenant": {"S": tenant}, "enqueued_at": _n(enqueued_at)}
    first_seen |= index_attributes(tenant, enqueued_at, job_id)
    if known is not None:
        first_seen |= {
            "payload_json": _payload_json(known.payload),
            "job_type": {"S": known.type},
            "max_attempts": _n(known.max_attempts),
        }
    sets, values = _if_not_exists(first_seen)
    item = _update_unless_refused(
        job_id,
        UpdateExpression="SET "
        + ", ".join(["#status = :cancelled", "cancelled_at = :now", "finished_at = :now", "expires_at = :ttl", *sets])
        + " REMOVE lease_until",
        ConditionExpression=(
            "attribute_not_exists(pk) OR (#tenant = :owner AND "
            "(#status IN (:queued, :failed) OR (#status = :running AND lease_until < :now)))"
        ),
        ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
        ExpressionAttributeValues=values
        | {
            ":cancelled": {"S": Status.CANCELLED},
            ":queued": {"S": Status.QUEUED},
            ":failed": {"S": Status.FAILED},
            ":running": {"S": Status.RUNNING},
            ":owner": {"S": tenant},
            ":now": _n(now),
            ":ttl": _n(_expires_at(now)),
        },
    )
    if isinstance(item, Refused):
        return item
    return record_from_item(item)


RETRYABLE = (Status.DEAD, Status.CANCELLED)


def reset_for_retry(
    job_id: str, tenant: str, now: float, statuses: tuple[Status, ...] = RETRYABLE
) -> JobMessage | Refused:
    """Start a dead or cancelled job over: status `queued`, a fresh attempt budget, `retries` + 1.

    Attempts keep counting (the job's code sees attempt 3 after two that failed): the budget is
    fresh because the record's max_attempts becomes attempts so far + the job's own budget
    (`attempt_budget`, its max_attempts when first retried), and the claim counts the record's.
    Returns that message. The record keeps its place in the listing and its first enqueue time; it
    expires like a finished one if its message never runs.

    The record says `retry_unsent` until `mark_retry_sent`: a retry of a job left `queued` with its
    message unsent (the send failed, or its request died) sends it; one whose message was sent does not.
    """
    names = [f":s{i}" for i in range(len(statuses))]
    item = _update_unless_refused(
        job_id,
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
            ":zero": _n(0),
            ":one": _n(1),
            ":owner": {"S": tenant},
            ":now": _n(now),
            ":ttl": _n(_expires_at(now)),
        },
    )
    if isinstance(item, Refused):
        return item
    return message_from_item(item, enqueued_at=now)


def retry_unsent(item: dict[str, Any]) -> float | None:
    """When the retry that queued this record ran, if its message is not known to have been sent."""
    return _as_float(item, "retry_unsent")


def mark_retry_sent(job_id: str, retried_at: float) -> bool:
    """The retry of `retried_at` sent its message: later retries of the queued job send nothing.
    False if the record moved on already (claimed, cancelled, retried again)."""
    return _conditional(
        Key=_key(job_id),
        UpdateExpression="REMOVE retry_unsent",
        ConditionExpression="#status = :queued AND retry_unsent = :at",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":queued": {"S": Status.QUEUED}, ":at": _n(retried_at)},
    )


def message_from_item(item: dict[str, Any], enqueued_at: float) -> JobMessage:
    """The message that runs a recorded job again, with its fresh budget; `enqueued_at`: when it is sent."""
    budget = _as_int(item, "attempt_budget") or _as_int(item, "max_attempts") or settings.DEFAULT_MAX_ATTEMPTS
    fields: dict[str, Any] = {
        "id": keys.job_id_of(item["pk"]["S"]),
        "tenant": _as_str(item, "tenant"),
        "type": _as_str(item, "job_type"),
        "payload": json.loads(item["payload_json"]["S"]),
        # The record's max_attempts (attempts so far + this budget) is what the claim counts; the
        # message carries the budget, within the limits every message is checked against.
        "max_attempts": budget,
        "enqueued_at": enqueued_at,
        "schedule": _as_str(item, "schedule_name"),
        "scheduled_for": _as_str(item, "scheduled_for"),
        "timeout_seconds": _as_int(item, "timeout_seconds"),
    }
    return JobMessage.from_dict({name: value for name, value in fields.items() if value is not None})


# The listing index --------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexPage:
    items: list[dict[str, Any]]
    last_key: dict[str, Any] | None  # where DynamoDB stopped reading, if it did before the range's end
    read: int  # index entries read (before filters)


def query_jobs_index(
    tenant: str,
    shard: int,
    *,
    oldest_sort_key: str,
    newest_sort_key: str,
    start_after: dict[str, Any] | None,
    limit: int,
    filters: dict[str, str] | None = None,
    attributes: tuple[str, ...] | None = None,
) -> IndexPage:
    """One Query of one of the tenant's index partitions, newest first, between two sort keys (both
    included); `limit` caps the entries
    *read* (DynamoDB applies filters after reading). Straight to DynamoDB: a query through the status
    cache would be answered from its query cache and hide new jobs."""
    names = {f"#f{i}": name for i, name in enumerate(filters or {})}
    params: dict[str, Any] = {
        "TableName": _table(),
        "IndexName": JOBS_INDEX.name,
        "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :oldest AND :newest",
        "ExpressionAttributeNames": {"#pk": JOBS_INDEX.partition_key, "#sk": JOBS_INDEX.sort_key} | names,
        "ExpressionAttributeValues": {
            ":pk": {"S": index_partition(tenant, shard)},
            ":oldest": {"S": oldest_sort_key},
            ":newest": {"S": newest_sort_key},
        }
        | {f":v{i}": {"S": value} for i, value in enumerate((filters or {}).values())},
        "ScanIndexForward": False,
        "Limit": limit,
    }
    if names:
        params["FilterExpression"] = " AND ".join(f"#f{i} = :v{i}" for i in range(len(names)))
    if attributes:
        projected = {f"#p{i}": name for i, name in enumerate(attributes)}
        params["ProjectionExpression"] = ", ".join(projected)
        params["ExpressionAttributeNames"] |= projected
    if start_after:
        params["ExclusiveStartKey"] = start_after
    answer = client("dynamodb").query(**params)
    return IndexPage(
        items=answer.get("Items", []), last_key=answer.get("LastEvaluatedKey"), read=answer.get("ScannedCount", 0)
    )
