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

from shared import settings
from shared.aws import client
from shared.model import JobMessage, JobRecord, Status
from shared.table_schema import JOBS_INDEX

_DAY = 86_400


def _table() -> str:
    return settings.env("CORRAL_TABLE", settings.TABLE_NAME)


def _key(job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"job#{job_id}"}}


def index_sort_key(enqueued_at: float, job_id: str) -> str:
    """Where a job sits in its tenant's listing: enqueue time in ms (13 digits, so it sorts as text), then id."""
    return f"{int(enqueued_at * 1000):013d}#{job_id}"


def index_shard(job_id: str) -> int:
    """Which of the tenant's listing partitions a job is written to (stable, spread evenly by id)."""
    return zlib.crc32(job_id.encode()) % settings.JOBS_INDEX_SHARDS


def index_partition(tenant: str, shard: int) -> str:
    return f"tenant#{tenant}#{shard:02d}"


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


def _jobs_client() -> Any:
    """The client job items go through: the status cache where there is one."""
    from shared.status_cache import jobs_client

    return jobs_client()


@dataclass(frozen=True)
class Claimed:
    attempt: int
    token: str


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


ClaimResult = Claimed | Finished | HeldElsewhere | Exhausted


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
        max_attempts=_as_int(item, "max_attempts"),
        timeout_seconds=_as_int(item, "timeout_seconds"),
        cancelled_at=_as_float(item, "cancelled_at"),
        retries=_as_int(item, "retries") or 0,
        extra={"tenant": _as_str(item, "tenant")},
        **recorded,
    )


def get(job_id: str) -> tuple[JobRecord, str] | None:
    """The record and its tenant, or None if no worker has seen the job."""
    item = _jobs_client().get_item(TableName=_table(), Key=_key(job_id)).get("Item")
    if not item:
        return None
    record = record_from_item(item)
    return record, record.extra["tenant"] or ""


def _payload_json(payload: Any) -> dict[str, str]:
    return {"S": json.dumps(payload, separators=(",", ":"))}


def claim(message: JobMessage, message_id: str, now: float, lease_seconds: int) -> ClaimResult:
    """Start an attempt: the job is new, queued again by a retry, failed (retry due) or its holder's lease expired."""
    token = secrets.token_hex(8)
    first_seen, first_seen_values = _if_not_exists(
        index_attributes(message.tenant, message.enqueued_at, message.id)
        | {"payload_json": _payload_json(message.payload), "first_started_at": _n(now)}
    )
    values: dict[str, Any] = {
        ":queued": {"S": Status.QUEUED},
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
        "max_attempts = :max",
        "enqueued_at = if_not_exists(enqueued_at, :enqueued)",
        *first_seen,  # what a retry needs to run the job again, and its place in the tenant's listing
    ]
    values |= first_seen_values
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
            ConditionExpression=(
                "attribute_not_exists(pk) OR #status = :queued OR "
                "(#status = :failed AND attempts < :max) OR "
                "(#status = :running AND lease_until < :now AND attempts < :max)"
            ),
            ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )["Attributes"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        old = error.response.get("Item") or _read_item(message.id)
        if old.get("status", {}).get("S") == Status.CANCELLED and "payload_json" not in old:
            _record_cancelled_message(message)
        return _why_not_claimed(old, message_id, now)
    return Claimed(attempt=int(item["attempts"]["N"]), token=token)


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
    try:
        _jobs_client().update_item(
            TableName=_table(),
            Key=_key(message.id),
            UpdateExpression="SET " + ", ".join(sets),
            ConditionExpression="#status = :cancelled AND #tenant = :tenant",
            ExpressionAttributeNames={"#status": "status", "#tenant": "tenant"},
            ExpressionAttributeValues=values
            | {":cancelled": {"S": Status.CANCELLED}, ":tenant": {"S": message.tenant}},
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise  # the delivery comes back and records it then; a retry answers 409 until it has


def _read_item(job_id: str) -> dict[str, Any]:
    # Only for stores that do not return ALL_OLD on a failed condition.
    return _jobs_client().get_item(TableName=_table(), Key=_key(job_id), ConsistentRead=True).get("Item") or {}


def _why_not_claimed(old: dict[str, Any], message_id: str, now: float) -> ClaimResult:
    status = Status(old["status"]["S"])
    attempts = _as_int(old, "attempts") or 0  # a job cancelled before any worker saw it has none
    if status.finished:
        return Finished()
    lease_left = (_as_float(old, "lease_until") or 0) - now
    if status is Status.RUNNING and lease_left >= 0:
        return HeldElsewhere(by_this_message=_as_str(old, "claimed_by") == message_id, lease_left_seconds=lease_left)
    return Exhausted(attempts=attempts)


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
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _expires_at(now: float) -> int:
    return int(now) + settings.FINISHED_JOB_TTL_DAYS * _DAY


def complete(job_id: str, token: str, result: Any, now: float) -> bool:
    return _finish(
        job_id,
        token,
        ":succeeded",
        ["#status = :succeeded", "result_json = :result", "finished_at = :now", "expires_at = :ttl"],
        {
            ":succeeded": {"S": Status.SUCCEEDED},
            ":result": {"S": json.dumps(result, default=str)},
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


# Steering: cancel and retry, each one conditional write -------------------------------------------


@dataclass(frozen=True)
class Refused:
    """The write's condition failed; `item` is the record as it is now ({} if there is none)."""

    item: dict[str, Any]


def _old_item(error: ClientError, job_id: str) -> dict[str, Any]:
    return error.response.get("Item") or _read_item(job_id)


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
    try:
        item = _jobs_client().update_item(
            TableName=_table(),
            Key=_key(job_id),
            UpdateExpression="SET "
            + ", ".join(
                ["#status = :cancelled", "cancelled_at = :now", "finished_at = :now", "expires_at = :ttl", *sets]
            )
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
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )["Attributes"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return Refused(_old_item(error, job_id))
    return record_from_item(item)


RETRYABLE = (Status.DEAD, Status.CANCELLED)


def reset_for_retry(
    job_id: str, tenant: str, now: float, statuses: tuple[Status, ...] = RETRYABLE
) -> JobMessage | Refused:
    """Start a dead or cancelled job over: status `queued`, a fresh attempt budget, `retries` + 1.

    Attempts keep counting (the job's code sees attempt 3 after two that failed): the budget is
    fresh because the message sent carries max_attempts = attempts so far + the job's own budget
    (`attempt_budget`, its max_attempts when first retried). Returns that message. The record keeps
    its place in the listing and its first enqueue time; it expires like a finished one if its
    message never runs.
    """
    names = [f":s{i}" for i in range(len(statuses))]
    try:
        item = _jobs_client().update_item(
            TableName=_table(),
            Key=_key(job_id),
            UpdateExpression=(
                "SET #status = :queued, retries = if_not_exists(retries, :zero) + :one, retried_at = :now, "
                "attempt_budget = if_not_exists(attempt_budget, max_attempts), expires_at = :ttl "
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
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )["Attributes"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return Refused(_old_item(error, job_id))
    return message_from_item(item, enqueued_at=now)


def message_from_item(item: dict[str, Any], enqueued_at: float) -> JobMessage:
    """The message that runs a recorded job again, with its fresh budget; `enqueued_at`: when it is sent."""
    budget = _as_int(item, "attempt_budget") or _as_int(item, "max_attempts") or settings.DEFAULT_MAX_ATTEMPTS
    fields: dict[str, Any] = {
        "id": item["pk"]["S"].removeprefix("job#"),
        "tenant": _as_str(item, "tenant"),
        "type": _as_str(item, "job_type"),
        "payload": json.loads(item["payload_json"]["S"]),
        "max_attempts": (_as_int(item, "attempts") or 0) + budget,
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
