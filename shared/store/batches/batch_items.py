"""Batch items: a batch's counts, its members' states and its callbacks' flags in one item
(`batch#<id>`), its callbacks' specs in another (`batch#<id>#callbacks`). See docs/decisions/batches.md.

The counts item holds `total`, `pending`, `succeeded`, `dead`, `cancelled`, `skipped`, the stored `status`, and
one short attribute per member that has left `pending`, which shared/store/batches/batch_members.py writes
(`mark`): one conditional write per change of a member's state, so the counts always equal the members'
states.

The batch's status and its callbacks are decided by a second conditional write (`settle`), pinned on
the five counts the caller saw: it sets the status they say and, for each callback now due and not
due before (`attribute_not_exists(due_<kind>)`), marks it due. Of all the writers that see a batch
finish, exactly one makes a callback due; that one enqueues it and marks it sent (`mark_sent`).

The counts item sits in the listing index (gsi2, partition `batches#<tenant>`) so a tenant's batches
list newest first; the index copies only `status`, `finished_at`, `enqueued_at` (the creation time)
and `tenant` (its INCLUDE projection), so a member's mark, which changes none of them, costs the
index nothing.

Cost (docs/decisions/batches.md): a write costs the item's size, ~0.4 KB plus ~4 bytes per member that
has finished: one write unit per mark while fewer than ~150 have, 5 at the end of a 1,000-job batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from shared import settings
from shared.aws.clients import client, is_condition_failure, single_attempt_client
from shared.model.spec import Callback, callbacks_of, callbacks_to_dict
from shared.store import keys, table
from shared.store.conditional import conditional_put, conditional_update
from shared.store.jobs import job_items
from shared.store.table_schema import JOBS_INDEX

RUNNING = "running"
SUCCEEDED = "succeeded"
COMPLETED_WITH_FAILURES = "completed_with_failures"
CANCELLED = "cancelled"
STATUSES = (RUNNING, SUCCEEDED, COMPLETED_WITH_FAILURES, CANCELLED)

_DAY = 86_400
# A running batch's item outlives any message of its jobs (a message lives 14 days in the queue); a
# finished one is kept as long as a finished job's record.
_RUNNING_KEPT_SECONDS = (settings.MESSAGE_RETENTION_DAYS + settings.FINISHED_JOB_TTL_DAYS) * _DAY
_FINISHED_KEPT_SECONDS = settings.FINISHED_JOB_TTL_DAYS * _DAY


@dataclass(frozen=True)
class BatchRecord:
    id: str
    tenant: str
    total: int
    pending: int
    succeeded: int
    dead: int
    cancelled: int
    stored_status: str  # as the last `settle` wrote it; `status` is what the counts say now
    created_at: float
    finished_at: float | None = None
    description: str | None = None
    cancel_requested_at: float | None = None
    cancel_done_at: float | None = None  # when a cancel had written every member it found pending
    request: str | None = None  # a keyed batch's request fingerprint (shared/ids.py request_fingerprint)
    all_sent_at: float | None = None  # a keyed batch: when its create had sent every job
    callbacks: tuple[str, ...] = ()  # the callbacks it was created with (on_complete, on_success)
    due: dict[str, float] = field(default_factory=dict)  # kind -> when it became due (enqueued once)
    sent: dict[str, float] = field(default_factory=dict)  # kind -> when its message was sent
    # Members that ended `skipped` (a debounce's later job ran in their place, or a unique key's holder was doing
    # their work): ended, and no failure (docs/decisions/batches.md).
    skipped: int = 0

    @property
    def status(self) -> str:
        if self.cancel_requested_at is not None:
            return CANCELLED
        if self.pending > 0:
            return RUNNING
        return SUCCEEDED if self.dead == 0 and self.cancelled == 0 else COMPLETED_WITH_FAILURES

    def wanted(self) -> list[str]:
        """The callbacks the counts call for now: on_complete once every member has ended, on_success
        once every member has succeeded; none for a cancelled batch."""
        if self.status == CANCELLED or self.pending > 0:
            return []
        return [kind for kind in self.callbacks if kind == "on_complete" or self.status == SUCCEEDED]

    def unsent(self) -> list[str]:
        """Callbacks made due whose message is not known to be sent."""
        return [kind for kind in self.due if kind not in self.sent]


def dynamodb(single_attempt: bool) -> Any:
    """`single_attempt`: no botocore retries, for the worker, whose fallback (handing the delivery back, to
    do it at its next delivery) is cheaper than waiting out the backoff while the store fails."""
    return single_attempt_client("dynamodb") if single_attempt else client("dynamodb")


def key(batch_id: str) -> dict[str, Any]:
    return keys.item_key(keys.batch_key(batch_id))


def _callbacks_key(batch_id: str) -> dict[str, Any]:
    return keys.item_key(keys.batch_callbacks_key(batch_id))


# Counters and flags are always named through placeholders: `total`, `status` and others are reserved words.
_COUNTS = {
    "#pending": "pending",
    "#succeeded": "succeeded",
    "#dead": "dead",
    "#cancelled": "cancelled",
    "#skipped": "skipped",
}
_RECORD_ATTRIBUTES = (
    "pk",
    "tenant",
    "total",
    "pending",
    "succeeded",
    "dead",
    "cancelled",
    "skipped",
    "status",
    "enqueued_at",
    "finished_at",
    "description",
    "cancel_requested_at",
    "cancel_done_at",
    "request_sha",
    "all_sent_at",
    "callbacks",
    "due_on_complete",
    "due_on_success",
    "sent_on_complete",
    "sent_on_success",
)


def record_of(item: dict[str, Any]) -> BatchRecord:
    def number(name: str) -> int:
        return int(item.get(name, {"N": "0"})["N"])

    callbacks = tuple(kind for kind in ("on_complete", "on_success") if kind in item.get("callbacks", {}).get("SS", []))
    return BatchRecord(
        id=keys.batch_id_of(item["pk"]["S"]),
        tenant=item["tenant"]["S"],
        total=number("total"),
        pending=number("pending"),
        succeeded=number("succeeded"),
        dead=number("dead"),
        cancelled=number("cancelled"),
        skipped=number("skipped"),  # 0 on a batch made before members could be skipped
        stored_status=item["status"]["S"],
        created_at=float(item["enqueued_at"]["N"]),
        finished_at=job_items.as_float(item, "finished_at"),
        description=job_items.as_str(item, "description"),
        cancel_requested_at=job_items.as_float(item, "cancel_requested_at"),
        cancel_done_at=job_items.as_float(item, "cancel_done_at"),
        request=job_items.as_str(item, "request_sha"),
        all_sent_at=job_items.as_float(item, "all_sent_at"),
        callbacks=callbacks,
        due={kind: float(item[f"due_{kind}"]["N"]) for kind in callbacks if f"due_{kind}" in item},
        sent={kind: float(item[f"sent_{kind}"]["N"]) for kind in callbacks if f"sent_{kind}" in item},
    )


def create(
    batch_id: str,
    tenant: str,
    total: int,
    now: float,
    *,
    description: str | None,
    callbacks: dict[str, Callback],
    request: str | None = None,
) -> BatchRecord:
    """Write a new batch, running with every member pending; or, if it exists (a request retried with
    its idempotency key), the batch as it is. The callbacks' specs first: a batch that exists has them.
    `request`: a keyed batch's request fingerprint, kept so the key's next use can be compared."""
    expires = {"N": str(int(now) + _RUNNING_KEPT_SECONDS)}
    if callbacks:  # a batch's first request sets them: a later use of its key never replaces them
        conditional_put(
            TableName=table.name(),
            Item=_callbacks_key(batch_id)
            | {
                "tenant": {"S": tenant},
                "specs": {"S": json.dumps(callbacks_to_dict(callbacks), separators=(",", ":"))},
                "expires_at": expires,
            },
            ConditionExpression="attribute_not_exists(pk)",
        )
    item: dict[str, Any] = key(batch_id) | {
        "tenant": {"S": tenant},
        "total": job_items.n(total),
        "pending": job_items.n(total),
        "succeeded": job_items.n(0),
        "dead": job_items.n(0),
        "cancelled": job_items.n(0),
        "skipped": job_items.n(0),
        "status": {"S": RUNNING},
        "enqueued_at": job_items.n(now),
        "expires_at": expires,
        JOBS_INDEX.partition_key: {"S": keys.batches_partition(tenant)},
        JOBS_INDEX.sort_key: {"S": job_items.index_sort_key(now, batch_id)},
    }
    if description:
        item["description"] = {"S": description}
    if request:
        item["request_sha"] = {"S": request}
    if callbacks:
        item["callbacks"] = {"SS": sorted(callbacks)}
    try:
        client("dynamodb").put_item(TableName=table.name(), Item=item, ConditionExpression="attribute_not_exists(pk)")
    except ClientError as error:
        if not is_condition_failure(error):
            raise
        existing = get(batch_id)
        if existing is None:
            raise
        return existing
    return record_of(item)


def get(batch_id: str, *, single_attempt: bool = False) -> BatchRecord | None:
    """The batch as it is (a consistent read of its counts, not its members' states), or None."""
    item = (
        dynamodb(single_attempt)
        .get_item(
            TableName=table.name(),
            Key=key(batch_id),
            ConsistentRead=True,
            ProjectionExpression=", ".join(f"#a{n}" for n in range(len(_RECORD_ATTRIBUTES))),
            ExpressionAttributeNames={f"#a{n}": name for n, name in enumerate(_RECORD_ATTRIBUTES)},
        )
        .get("Item")
    )
    return record_of(item) if item else None


def callback_specs(batch_id: str, *, single_attempt: bool = False) -> dict[str, Callback]:
    """The batch's callbacks as it was created with them, by kind."""
    item = dynamodb(single_attempt).get_item(TableName=table.name(), Key=_callbacks_key(batch_id)).get("Item")
    return callbacks_of(json.loads(item["specs"]["S"])) if item else {}


def settle(batch: BatchRecord, now: float, *, single_attempt: bool = False) -> BatchRecord:
    """Write the status `batch`'s counts say, and make due each callback they call for that is not due
    yet, in one write pinned on those counts: of every writer that sees the batch finish, exactly one
    makes a callback due. The batch after; unchanged if there was nothing to write or the counts (or a
    callback's flag) moved meanwhile (then whoever moved them settles)."""
    due_now = [kind for kind in batch.wanted() if kind not in batch.due]
    status = batch.status
    if status == batch.stored_status and not due_now:
        return batch
    sets = ["#status = :status", "expires_at = :expires"]
    removes: list[str] = []
    values: dict[str, Any] = {
        ":status": {"S": status},
        ":p": job_items.n(batch.pending),
        ":s": job_items.n(batch.succeeded),
        ":d": job_items.n(batch.dead),
        ":c": job_items.n(batch.cancelled),
        ":k": job_items.n(batch.skipped),
    }
    if batch.pending == 0 or due_now:
        values[":now"] = job_items.n(now)
    if batch.pending == 0:
        sets.append("finished_at = :now")
        values[":expires"] = {"N": str(int(now) + _FINISHED_KEPT_SECONDS)}
    else:
        removes.append("finished_at")
        values[":expires"] = {"N": str(int(now) + _RUNNING_KEPT_SECONDS)}
    conditions = ["#pending = :p", "#succeeded = :s", "#dead = :d", "#cancelled = :c"]
    # A batch made before members could be skipped has no `skipped` count until its first skipped member.
    conditions.append("(#skipped = :k OR attribute_not_exists(#skipped))" if batch.skipped == 0 else "#skipped = :k")
    for kind in due_now:
        sets.append(f"due_{kind} = :now")
        conditions.append(f"attribute_not_exists(due_{kind})")
    update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    try:
        answer = dynamodb(single_attempt).update_item(
            TableName=table.name(),
            Key=key(batch.id),
            UpdateExpression=update,
            ConditionExpression=" AND ".join(conditions),
            ExpressionAttributeNames={"#status": "status"} | _COUNTS,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
    except ClientError as error:
        if not is_condition_failure(error):
            raise
        return batch
    return record_of(answer["Attributes"])


def mark_sent(batch_id: str, kind: str, now: float, *, single_attempt: bool = False) -> None:
    """The `kind` callback's message is sent: nobody sends it again."""
    dynamodb(single_attempt).update_item(
        TableName=table.name(),
        Key=key(batch_id),
        UpdateExpression=f"SET sent_{kind} = if_not_exists(sent_{kind}, :now)",
        ConditionExpression="attribute_exists(pk)",
        ExpressionAttributeValues={":now": job_items.n(now)},
    )


def mark_all_sent(batch_id: str, now: float) -> None:
    """A keyed batch's create sent every one of its jobs: a repeat of its request need send none."""
    client("dynamodb").update_item(
        TableName=table.name(),
        Key=key(batch_id),
        UpdateExpression="SET all_sent_at = if_not_exists(all_sent_at, :now)",
        ConditionExpression="attribute_exists(pk)",
        ExpressionAttributeValues={":now": job_items.n(now)},
    )


def request_cancel(batch_id: str, now: float) -> bool:
    """The batch is cancelled (its members not started are cancelled by the caller): it runs no callback.
    Written only while some member is pending, or if it is cancelled already: a finished batch is never
    relabelled `cancelled`. False if it had finished (or is gone)."""
    return conditional_update(
        client("dynamodb"),
        TableName=table.name(),
        Key=key(batch_id),
        UpdateExpression="SET cancel_requested_at = if_not_exists(cancel_requested_at, :now)",
        ConditionExpression="attribute_exists(pk) AND (#pending > :zero OR attribute_exists(cancel_requested_at))",
        ExpressionAttributeNames={"#pending": "pending"},
        ExpressionAttributeValues={":now": job_items.n(now), ":zero": job_items.n(0)},
    )


def finish_cancel(batch_id: str, now: float) -> BatchRecord | None:
    """A cancel wrote every member it found pending: the next cancel of the batch has nothing to do.
    The batch after; None if there is no such batch."""
    try:
        answer = client("dynamodb").update_item(
            TableName=table.name(),
            Key=key(batch_id),
            UpdateExpression="SET cancel_done_at = if_not_exists(cancel_done_at, :now)",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":now": job_items.n(now)},
            ReturnValues="ALL_NEW",  # the counts item: a few KB at most, never a job's record
        )
    except ClientError as error:
        if is_condition_failure(error):
            return None
        raise
    return record_of(answer["Attributes"])


@dataclass(frozen=True)
class ListedBatch:
    id: str
    status: str  # as stored: the last settle's
    created_at: float
    finished_at: float | None


def page(tenant: str, *, status: str | None, before: str | None, limit: int) -> tuple[list[ListedBatch], str | None]:
    """The tenant's batches newest first, below the sort key `before`, at most `limit`, reading at most
    settings.LIST_READ_BUDGET index entries (a status filter applies after reading): the batches and the
    sort key to continue below, None when there are no more."""
    params: dict[str, Any] = {
        "TableName": table.name(),
        "IndexName": JOBS_INDEX.name,
        "KeyConditionExpression": f"{JOBS_INDEX.partition_key} = :pk"
        + (f" AND {JOBS_INDEX.sort_key} < :before" if before else ""),
        "ExpressionAttributeValues": {":pk": {"S": keys.batches_partition(tenant)}}
        | ({":before": {"S": before}} if before else {}),
        "ScanIndexForward": False,
    }
    if status:
        params |= {"FilterExpression": "#status = :status", "ExpressionAttributeNames": {"#status": "status"}}
        params["ExpressionAttributeValues"][":status"] = {"S": status}
    found: list[ListedBatch] = []
    read = 0
    while True:
        params["Limit"] = max(1, min(limit + 1 - len(found), settings.LIST_READ_BUDGET - read))
        answer = client("dynamodb").query(**params)
        read += answer.get("ScannedCount", 0)
        for item in answer.get("Items", []):
            found.append(
                ListedBatch(
                    id=keys.batch_id_of(item["pk"]["S"]),
                    status=item["status"]["S"],
                    created_at=float(item["enqueued_at"]["N"]),
                    finished_at=job_items.as_float(item, "finished_at"),
                )
            )
        last = answer.get("LastEvaluatedKey")
        if len(found) > limit:
            return found[:limit], _sort_key(found[limit - 1])
        if last is None:
            return found, None
        if read >= settings.LIST_READ_BUDGET:
            return found, last[JOBS_INDEX.sort_key]["S"]
        params["ExclusiveStartKey"] = last


def _sort_key(batch: ListedBatch) -> str:
    return job_items.index_sort_key(batch.created_at, batch.id)
