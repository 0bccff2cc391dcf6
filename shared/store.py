"""Job records in DynamoDB, written only with conditional writes.

Every status write names the attempt that makes it (a random token set at claim),
so a duplicate delivery, or an attempt whose lease expired and was taken over,
cannot record a second outcome. Job items are read and written through a
low-level client (DAX speaks only that dialect; see docs/architecture.md).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from shared import settings
from shared.aws import aws_error_code
from shared.model import JobMessage, JobRecord, Status

_DAY = 86_400


def _table() -> str:
    return settings.env("CORRAL_TABLE", settings.TABLE_NAME)


def _key(job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"job#{job_id}"}}


def _jobs_client() -> Any:
    """The client job items go through: the status cache where there is one."""
    from shared.status_cache import jobs_client

    return jobs_client()


@dataclass(frozen=True)
class Claimed:
    attempt: int
    token: str
    max_attempts: int  # the record's: the first message of a job sets it (an idempotency key's first request)


@dataclass(frozen=True)
class Finished:
    """Succeeded or dead already: a duplicate delivery."""


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


def record_from_item(item: dict[str, Any]) -> JobRecord:
    result_json = _as_str(item, "result_json")
    return JobRecord(
        id=item["pk"]["S"].removeprefix("job#"),
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
        extra={"tenant": _as_str(item, "tenant")},
    )


def get(job_id: str) -> tuple[JobRecord, str] | None:
    """The record and its tenant, or None if no worker has seen the job."""
    item = _jobs_client().get_item(TableName=_table(), Key=_key(job_id)).get("Item")
    if not item:
        return None
    record = record_from_item(item)
    return record, record.extra["tenant"] or ""


def index_attributes(tenant: str, enqueued_at: float, job_id: str) -> dict[str, dict[str, str]]:
    """The listing index (gsi2) attributes of a job: a tenant's jobs, oldest enqueued first.
    Every write that creates a job record sets them."""
    return {
        "gsi2pk": {"S": f"tenant#{tenant}"},
        "gsi2sk": {"S": f"{int(enqueued_at * 1000):013d}#{job_id}"},
    }


def _payload_json(payload: Any) -> dict[str, str]:
    return {"S": json.dumps(payload, separators=(",", ":"))}


def claim(message: JobMessage, message_id: str, now: float, lease_seconds: int) -> ClaimResult:
    """Start an attempt: the job is new, failed (retry due) or its holder's lease expired.

    The record keeps what rebuilds the message (payload_json, written once) and its tenant:
    a claim never changes a record's tenant, so a message naming another tenant cannot take it over.
    """
    token = secrets.token_hex(8)
    values: dict[str, Any] = {
        ":queued": {"S": Status.QUEUED},  # a record written without a claim, to be run (e.g. a retry)
        ":running": {"S": Status.RUNNING},
        ":failed": {"S": Status.FAILED},
        ":zero": _n(0),
        ":one": _n(1),
        ":now": _n(now),
        ":lease": _n(now + lease_seconds),
        ":token": {"S": token},
        ":message": {"S": message_id},
        ":tenant": {"S": message.tenant},
        ":type": {"S": message.type},
        ":max": _n(message.max_attempts),
        ":enqueued": _n(message.enqueued_at),
        ":payload": _payload_json(message.payload),
    }
    sets = [
        "#status = :running",
        "attempts = if_not_exists(attempts, :zero) + :one",
        "lease_until = :lease",
        "attempt_token = :token",
        "claimed_by = :message",
        "started_at = :now",
        "#tenant = :tenant",
        "job_type = :type",
        "max_attempts = if_not_exists(max_attempts, :max)",
        "enqueued_at = if_not_exists(enqueued_at, :enqueued)",
        "payload_json = if_not_exists(payload_json, :payload)",
    ]
    for name, value in index_attributes(message.tenant, message.enqueued_at, message.id).items():
        values[f":{name}"] = value
        sets.append(f"{name} = if_not_exists({name}, :{name})")
    if message.timeout_seconds is not None:
        values[":timeout"] = _n(message.timeout_seconds)
        sets.append("timeout_seconds = :timeout")
    if message.schedule:
        values |= {
            ":schedule": {"S": message.schedule},
            ":scheduled_for": {"S": message.scheduled_for or ""},
            ":runs_key": {"S": f"runs#{message.tenant}#{message.schedule}"},
        }
        sets += [
            "schedule_name = :schedule",
            "scheduled_for = :scheduled_for",
            "gsi1pk = :runs_key",
            "gsi1sk = :scheduled_for",
        ]
    try:
        item = _jobs_client().update_item(
            TableName=_table(),
            Key=_key(message.id),
            UpdateExpression="SET " + ", ".join(sets),
            # An existing record's own max_attempts counts (the first message's, if a later one
            # with the same idempotency key asks for another number).
            ConditionExpression=(
                "attribute_not_exists(pk) OR (#tenant = :tenant "
                "AND (attribute_not_exists(attempts) OR attempts < max_attempts) "
                "AND (#status IN (:queued, :failed) OR (#status = :running AND lease_until < :now)))"
            ),
            ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )["Attributes"]
    except ClientError as error:
        if aws_error_code(error) != "ConditionalCheckFailedException":
            raise
        old = error.response.get("Item") or _read_item(message.id)
        return _why_not_claimed(old, message, message_id, now)
    return Claimed(attempt=int(item["attempts"]["N"]), token=token, max_attempts=int(item["max_attempts"]["N"]))


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


def _finish(job_id: str, token: str, outcome: str, sets: list[str], values: dict[str, Any]) -> bool:
    """Apply an attempt's outcome if that attempt still holds the job. False if it lost it.

    The same attempt may apply the same outcome again: a write DynamoDB applied but whose answer
    was lost is retried by botocore, and must succeed (not fail its condition) so that it passes
    through the status cache and leaves the cache holding the outcome, not the stale `running`.
    """
    try:
        _jobs_client().update_item(
            TableName=_table(),
            Key=_key(job_id),
            UpdateExpression="SET " + ", ".join(sets) + " REMOVE lease_until",
            ConditionExpression="attempt_token = :token AND #status IN (:running, " + outcome + ")",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":token": {"S": token}, ":running": {"S": Status.RUNNING}} | values,
        )
    except ClientError as error:
        if aws_error_code(error) == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _expires_at(now: float) -> int:
    return int(now) + settings.FINISHED_JOB_TTL_DAYS * _DAY


def result_json(result: Any) -> str:
    """A job's result as stored (what GET shows): JSON, anything else as its str()."""
    return json.dumps(result, default=str)


def complete(job_id: str, token: str, result: Any, now: float) -> bool:
    return _finish(
        job_id,
        token,
        ":succeeded",
        ["#status = :succeeded", "result_json = :result", "finished_at = :now", "expires_at = :ttl"],
        {
            ":succeeded": {"S": Status.SUCCEEDED},
            ":result": {"S": result_json(result)},
            ":now": _n(now),
            ":ttl": _n(_expires_at(now)),
        },
    )


def fail(job_id: str, token: str, error: str, now: float, *, dead: bool) -> bool:
    sets = ["#status = :outcome", "last_error = :error"]
    values: dict[str, Any] = {":outcome": {"S": Status.DEAD if dead else Status.FAILED}, ":error": {"S": error[:2000]}}
    if dead:
        sets += ["finished_at = :now", "expires_at = :ttl"]
        values |= {":now": _n(now), ":ttl": _n(_expires_at(now))}
    return _finish(job_id, token, ":outcome", sets, values)


def bury(message: JobMessage, error: str, now: float) -> None:
    """Mark dead a job whose attempts all died without an outcome (worker crashes)."""
    _jobs_client().update_item(
        TableName=_table(),
        Key=_key(message.id),
        UpdateExpression=(
            "SET #status = :dead, last_error = :error, finished_at = :now, expires_at = :ttl REMOVE lease_until"
        ),
        ConditionExpression="#status IN (:running, :failed)",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={
            ":dead": {"S": Status.DEAD},
            ":running": {"S": Status.RUNNING},
            ":failed": {"S": Status.FAILED},
            ":error": {"S": error},
            ":now": _n(now),
            ":ttl": _n(_expires_at(now)),
        },
    )


def record_unrunnable(job: dict[str, Any], reason: str, now: float) -> bool:
    """Record `dead`, with the reason, a job whose message cannot run (no claim: nothing ran).

    `job` holds the message's fields that were valid (at least a verified `id` and `tenant`).
    Written only where there is no record yet: a job already known keeps its record (its
    own message is still on its way), and only the bad message goes to the DLQ. False then.
    """
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
                "gsi1pk": {"S": f"runs#{tenant}#{job['schedule']}"},
                "gsi1sk": {"S": job["scheduled_for"]},
            }
    try:
        _jobs_client().put_item(TableName=_table(), Item=item, ConditionExpression="attribute_not_exists(pk)")
    except ClientError as error:
        if aws_error_code(error) == "ConditionalCheckFailedException":
            return False
        raise
    return True
