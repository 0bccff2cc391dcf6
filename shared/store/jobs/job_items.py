"""Job items as the table holds them: their keys, the client they go through, the conditional write
every job write uses, and the codec between an item and a record or a message."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from shared import settings
from shared.aws.clients import aws_error_code
from shared.model.message import BatchMember, JobMessage
from shared.model.record import JobRecord
from shared.model.spec import CALLBACK_KINDS, Concurrency, callbacks_to_dict
from shared.model.states import Status
from shared.store import keys, table
from shared.store.table_schema import JOBS_INDEX

DAY = 86_400


def key(job_id: str) -> dict[str, Any]:
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


def if_not_exists(values: dict[str, dict[str, str]]) -> tuple[list[str], dict[str, Any]]:
    """SET clauses that write each attribute only if the record lacks it, and their values."""
    return [f"{name} = if_not_exists({name}, :{name})" for name in values], {f":{k}": v for k, v in values.items()}


def jobs_client(single_attempt: bool = False) -> Any:
    """The client job items go through: the status cache where there is one."""
    from shared.aws.status_cache import jobs_client

    return jobs_client(single_attempt)


def prepare_clients() -> None:
    """Create the clients job items go through and make one read with them (the worker's init phase):
    a client's first request resolves its endpoint and builds its serializers, ~0.1 s on AWS and up to
    ~1 s on a busy 2-core machine, which would otherwise fall on the first job's clock."""
    jobs_client(single_attempt=False)
    jobs_client(single_attempt=True).get_item(TableName=table.name(), Key=key("init-phase-read"))


@dataclass(frozen=True)
class ConditionFailed:
    """A conditional write's condition failed; `item` is the record the failure returned ({} if none)."""

    item: dict[str, Any]


def write(*, put: bool = False, single_attempt: bool = False, **params: Any) -> dict[str, Any] | ConditionFailed:
    """One conditional write of a job item (UpdateItem, or PutItem if `put`): DynamoDB's answer, or
    _ConditionFailed. `single_attempt`: no botocore retries (see `claim`)."""
    jobs = jobs_client(single_attempt)
    try:
        return (jobs.put_item if put else jobs.update_item)(TableName=table.name(), **params)
    except ClientError as error:
        if aws_error_code(error) != "ConditionalCheckFailedException":
            raise
        return ConditionFailed(error.response.get("Item") or {})


def conditional(**params: Any) -> bool:
    """A conditional write (as `_write`): False if its condition failed."""
    return not isinstance(write(**params), ConditionFailed)


def old_item(failed: ConditionFailed, job_id: str) -> dict[str, Any]:
    """The record a failed condition met: as the failure returned it (ALL_OLD), else read again."""
    return failed.item or read_item(job_id)


def n(value: float | int) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def as_float(item: dict[str, Any], name: str) -> float | None:
    return float(item[name]["N"]) if name in item else None


def as_str(item: dict[str, Any], name: str) -> str | None:
    return item[name]["S"] if name in item else None


def as_int(item: dict[str, Any], name: str) -> int | None:
    return int(item[name]["N"]) if name in item else None


def record_from_item(item: dict[str, Any]) -> JobRecord:
    result_json = as_str(item, "result_json")
    payload_json = as_str(item, "payload_json")
    recorded = {"payload": json.loads(payload_json)} if payload_json is not None else {}
    return JobRecord(
        id=keys.job_id_of(item["pk"]["S"]),
        status=Status(item["status"]["S"]),
        type=as_str(item, "job_type"),
        attempts=int(item.get("attempts", {"N": "0"})["N"]),
        result=json.loads(result_json) if result_json is not None else None,
        error=as_str(item, "last_error"),
        enqueued_at=as_float(item, "enqueued_at"),
        started_at=as_float(item, "started_at"),
        finished_at=as_float(item, "finished_at"),
        schedule=as_str(item, "schedule_name"),
        scheduled_for=as_str(item, "scheduled_for"),
        max_attempts=as_int(item, "max_attempts"),
        timeout_seconds=as_int(item, "timeout_seconds"),
        cancelled_at=as_float(item, "cancelled_at"),
        retries=as_int(item, "retries") or 0,
        tenant=as_str(item, "tenant") or "",
        concurrency=_concurrency(item),
        batch=as_str(item, "batch_id"),
        batch_index=as_int(item, "batch_index"),
        parent=json.loads(parent) if (parent := as_str(item, "parent_json")) else None,
        started_by=json.loads(started) if (started := as_str(item, STARTED_BY)) else None,
        callbacks=_callbacks_view(item),
        trigger=as_str(item, "run_trigger"),
        skip_reason=as_str(item, "skip_reason"),
        request=as_str(item, REQUEST),
        priority=as_str(item, PRIORITY),
        waiting_for=json.loads(waiting) if (waiting := as_str(item, "waiting_for")) else None,
        queued_waiting_for=json.loads(queued) if (queued := as_str(item, QUEUED_WAITING_FOR)) else None,
        journal="journal" in item,
        **recorded,
    )


# A keyed job's request fingerprint, written by the first message that reaches the record.
REQUEST = "request_sha"
PRIORITY = "job_priority"  # a job's lane when not default (JobMessage.priority): a retry from the record keeps it
# What a job not yet claimed waits for (its throttle, its debounce group): the claim removes it.
QUEUED_WAITING_FOR = "queued_waiting_for"
STARTED_BY = "started_by_json"  # a trigger's job: {"trigger", "event"} (JobMessage.started_by)


def relations(message: JobMessage) -> dict[str, dict[str, str]]:
    """What a record keeps of the jobs a job is related to: its batch, its callbacks' specs (a retry's
    message carries them again), its parent if it is a callback. Written once (if_not_exists)."""
    kept: dict[str, dict[str, str]] = {}
    if message.batch is not None:
        kept |= {"batch_id": {"S": message.batch.id}, "batch_index": n(message.batch.index)}
    if message.callbacks:
        kept["callbacks_json"] = {"S": json.dumps(callbacks_to_dict(message.callbacks), separators=(",", ":"))}
    if message.parent:
        kept["parent_json"] = {"S": json.dumps(message.parent, separators=(",", ":"))}
    if message.started_by:
        kept[STARTED_BY] = {"S": json.dumps(message.started_by, separators=(",", ":"))}
    return kept


def job_fields(message: JobMessage, started_at: float | None) -> tuple[list[str], dict[str, Any]]:
    """SET clauses (and values) recording what the message says of its job, written by every attempt:
    its tenant and type, what a retry needs to run it again, and its place in the tenant's listing.
    `started_at`: when its attempt started (None: none did)."""
    started = {} if started_at is None else {"first_started_at": n(started_at)}
    first_seen, values = if_not_exists(
        index_attributes(message.tenant, message.enqueued_at, message.id)
        | {"payload_json": payload_json(message.payload)}
        | started
        | relations(message)
        | request_fields(message)
    )
    values |= {
        ":tenant": {"S": message.tenant},
        ":type": {"S": message.type},
        ":max": n(message.max_attempts),
        ":enqueued": n(message.enqueued_at),
    }
    sets = [
        "#tenant = :tenant",
        "job_type = :type",
        "max_attempts = if_not_exists(max_attempts, :max)",
        "enqueued_at = if_not_exists(enqueued_at, :enqueued)",
        *first_seen,
    ]
    if message.timeout_seconds is not None:
        values[":timeout"] = n(message.timeout_seconds)
        sets.append("timeout_seconds = :timeout")
    if message.level.carried is not None:
        values[":priority"] = {"S": message.level.carried}
        sets.append(f"{PRIORITY} = :priority")
    if message.concurrency is not None:
        values |= {":ckey": {"S": message.concurrency.key}, ":climit": n(message.concurrency.limit)}
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


def request_fields(message: JobMessage) -> dict[str, dict[str, str]]:
    """A keyed job's request fingerprint, as the record keeps it (written once, by the first message)."""
    return {REQUEST: {"S": message.request}} if message.request else {}


def callback_sent_attribute(kind: str) -> str:
    """The record's attribute holding the id of its `kind` callback once that job is enqueued."""
    return f"callback_{kind}"


def _callbacks_view(item: dict[str, Any]) -> dict[str, str | None] | None:
    declared = as_str(item, "callbacks_json")
    if declared is None:
        return None
    kinds = [kind for kind in json.loads(declared) if kind in CALLBACK_KINDS]
    return {kind: as_str(item, callback_sent_attribute(kind)) for kind in kinds}


def _concurrency(item: dict[str, Any]) -> Concurrency | None:
    key, limit = as_str(item, "concurrency_key"), as_int(item, "concurrency_limit")
    return Concurrency(key, limit) if key is not None and limit is not None else None


def payload_json(payload: Any) -> dict[str, str]:
    return {"S": json.dumps(payload, separators=(",", ":"))}


def skipped_item(message: JobMessage, now: float, reason: str, skipped_for: str | None) -> dict[str, Any]:
    """The record of a job that ends `skipped` with no attempt made (a schedule's overlapping run, a superseded
    debounced job, a job whose unique key another job held): its message's content, so it can be read and
    retried, and why (`reason`, naming `skipped_for`)."""
    item: dict[str, Any] = {
        **key(message.id),
        "status": {"S": Status.SKIPPED},
        "tenant": {"S": message.tenant},
        "job_type": {"S": message.type},
        "payload_json": payload_json(message.payload),
        "max_attempts": n(message.max_attempts),
        "attempts": n(0),
        "enqueued_at": n(message.enqueued_at),
        "finished_at": n(now),
        "expires_at": n(expires_at(now)),
        "skip_reason": {"S": reason},
        **index_attributes(message.tenant, message.enqueued_at, message.id),
    }
    if skipped_for is not None:
        item["skipped_for"] = {"S": skipped_for}
    if message.timeout_seconds is not None:
        item["timeout_seconds"] = n(message.timeout_seconds)
    if message.level.carried is not None:
        item[PRIORITY] = {"S": message.level.carried}
    if message.trigger:
        item["run_trigger"] = {"S": message.trigger}
    if (
        message.schedule and message.scheduled_for
    ):  # a schedule's run: listed with its runs (an index key is never empty)
        item |= {
            "schedule_name": {"S": message.schedule},
            "scheduled_for": {"S": message.scheduled_for},
            "gsi1pk": {"S": keys.runs_partition(message.tenant, message.schedule)},
            "gsi1sk": {"S": message.scheduled_for},
        }
    return item | relations(message)  # a batch's member stays its batch's; its callbacks are kept for a reader


def expires_at(now: float) -> int:
    return int(now) + settings.FINISHED_JOB_TTL_DAYS * DAY


def message_from_item(item: dict[str, Any], enqueued_at: float) -> JobMessage:
    """The message that runs a recorded job again, with its fresh budget; `enqueued_at`: when it is sent."""
    budget = as_int(item, "attempt_budget") or as_int(item, "max_attempts") or settings.DEFAULT_MAX_ATTEMPTS
    fields: dict[str, Any] = {
        "id": keys.job_id_of(item["pk"]["S"]),
        "tenant": as_str(item, "tenant"),
        "type": as_str(item, "job_type"),
        "payload": json.loads(item["payload_json"]["S"]),
        # The record's max_attempts (attempts so far + this budget) is what the claim counts; the
        # message carries the budget, within the limits every message is checked against.
        "max_attempts": budget,
        "enqueued_at": enqueued_at,
        "schedule": as_str(item, "schedule_name"),
        "scheduled_for": as_str(item, "scheduled_for"),
        "timeout_seconds": as_int(item, "timeout_seconds"),
        "concurrency": concurrency.to_dict() if (concurrency := _concurrency(item)) else None,
        "batch": _member(item),
        "callbacks": json.loads(callbacks) if (callbacks := as_str(item, "callbacks_json")) else None,
        "parent": json.loads(parent) if (parent := as_str(item, "parent_json")) else None,
        "started_by": json.loads(started) if (started := as_str(item, STARTED_BY)) else None,
        "request": as_str(item, REQUEST),
        "priority": as_str(item, PRIORITY),
    }
    return JobMessage.from_dict(
        {name: value for name, value in fields.items() if value is not None or name == "payload"}  # null: a payload
    )


def _member(item: dict[str, Any]) -> dict[str, Any] | None:
    """A batch member's place, as its next run counts: the record's retries are its generation."""
    batch, index = as_str(item, "batch_id"), as_int(item, "batch_index")
    if batch is None or index is None:
        return None
    return BatchMember(batch, index, as_int(item, "retries") or 0).to_dict()


def read_item(job_id: str, *, single_attempt: bool = False) -> dict[str, Any]:
    """The record as it is, a consistent read (for stores that do not return ALL_OLD on a failed condition)."""
    found = jobs_client(single_attempt).get_item(TableName=table.name(), Key=key(job_id), ConsistentRead=True)
    return found.get("Item") or {}
