"""A debounce key's group, one item per (tenant, key): `debounce#<tenant>#<key>` (shared/flow/debounce.py `Group`).

Attributes: `seq` (arrivals so far), `latest`, `arrived_at`, `first_at`, `first_seq` (the current group), `fired`
and `fired_first_seq` (the last group that ran as the current one), `closed` (a map: the latest of each group closed
before it ran -> {s: its first arrival number, t: when it closed, r: true once that latest ran}), and `expires_at`
(the table's TTL: long enough for a superseded job's message, which may come as late as the queue keeps it, to find
its group).

- **An arrival** (`arrive`: the API, for a job it enqueues; the worker, for a schedule's firing or an event's
  job) is one strongly consistent read and one write of the whole group conditioned on `seq` being what was
  read; a writer that lost the race computes again from the group its failed write returned. The job's message
  carries its arrival number (`seq`), and is sent after the write, delayed until its group is due.
- **A run** (`fire`) is one transaction with the job's claim: the claim (a new record) and the group's change
  (the latest ran, or a closed group's latest ran), each conditioned, so a group runs once however its workers
  die: a worker that dies after the transaction left a record, and the next delivery claims it as any job's.
- **A superseded job** is decided from one read (`fire` answers `Superseded`); its `skipped` record is the job
  store's write.

Cost per debounced job: its arrival, one read and one write (the group, well under 1 KB: 1 RRU, 1 WRU); then
the job that runs, one read and the transaction (its claim and the group: 2 WRU each, as transactions are);
each superseded one, one read (and its `skipped` record).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from shared.aws.clients import client, is_condition_failure, single_attempt_client
from shared.errors import Unavailable
from shared.flow import debounce as rules
from shared.flow.debounce import Closed, Debounce, Decision, Fire, Group
from shared.store import keys, table
from shared.store.conditional import failed_conditions

_ARRIVAL_TRIES = 4  # writes an arrival makes before it gives up (other arrivals won every race): 503, retryable
_FIRE_TRIES = 3


class DebounceContended(Unavailable):
    """Other arrivals changed the key's group each time this one tried: the enqueue answers 503 (retryable)."""


def _client(single_attempt: bool) -> Any:
    return single_attempt_client("dynamodb") if single_attempt else client("dynamodb")


def _key(tenant: str, key: str) -> dict[str, Any]:
    return keys.item_key(keys.debounce_key(tenant, key))


def read(tenant: str, key: str, *, single_attempt: bool = False) -> Group | None:
    """The key's group (strongly consistent), None if it has no item."""
    item = (
        _client(single_attempt).get_item(TableName=table.name(), Key=_key(tenant, key), ConsistentRead=True).get("Item")
    )
    return _group_of(item) if item else None


def _group_of(item: dict[str, Any]) -> Group:
    def number(name: str) -> float:
        return float(item[name]["N"]) if name in item else 0.0

    closed = {
        job: Closed(
            first_seq=int(entry["M"]["s"]["N"]),
            closed_at=float(entry["M"]["t"]["N"]),
            ran=entry["M"].get("r", {}).get("BOOL", False),
        )
        for job, entry in item.get("closed", {}).get("M", {}).items()
    }
    return Group(
        seq=int(number("seq")),
        latest=item["latest"]["S"] if "latest" in item else None,
        arrived_at=number("arrived_at"),
        first_at=number("first_at"),
        first_seq=int(number("first_seq")),
        fired=item["fired"]["S"] if "fired" in item else None,
        fired_first_seq=int(number("fired_first_seq")),
        closed=closed,
    )


def _item_of(tenant: str, key: str, group: Group, debounce: Debounce) -> dict[str, Any]:
    item: dict[str, Any] = _key(tenant, key) | {
        "seq": {"N": str(group.seq)},
        "arrived_at": {"N": repr(group.arrived_at)},
        "first_at": {"N": repr(group.first_at)},
        "first_seq": {"N": str(group.first_seq)},
        "fired_first_seq": {"N": str(group.fired_first_seq)},
        "closed": {
            "M": {
                job: {
                    "M": {"s": {"N": str(entry.first_seq)}, "t": {"N": repr(entry.closed_at)}}
                    | ({"r": {"BOOL": True}} if entry.ran else {})
                }
                for job, entry in group.closed.items()
            }
        },
        "expires_at": {"N": str(math.ceil(rules.due_at(group, debounce) + rules.CLOSED_KEPT_SECONDS))},
    }
    if group.latest is not None:
        item["latest"] = {"S": group.latest}
    if group.fired is not None:
        item["fired"] = {"S": group.fired}
    return item


@dataclass(frozen=True)
class Arrived:
    """An arrival recorded: its number (its message carries it), how long its message waits in the queue, the job
    it superseded or the latest of the group it closed, and the group before it (to undo it if the send fails)."""

    seq: int
    delay_seconds: int
    superseded: str | None
    closed: str | None
    before: Group | None


def arrive(tenant: str, debounce: Debounce, job_id: str, at: float, *, single_attempt: bool = False) -> Arrived:
    """Record `job_id`'s arrival at `at` in its key's group. DebounceContended if other arrivals won every race."""
    before = read(tenant, debounce.key, single_attempt=single_attempt)
    for _ in range(_ARRIVAL_TRIES):
        if before is not None and job_id in (before.latest, before.fired, *before.closed):
            # Recorded already: a write whose answer was lost, retried (by botocore, or by the client under its
            # idempotency key). It stays one arrival, which an undo leaves as it is.
            due = rules.send_delay(before, at, debounce) if before.latest == job_id else 0
            return Arrived(seq=before.seq, delay_seconds=due, superseded=None, closed=None, before=before)
        arrival = rules.arrive(before or Group(), job_id, at, debounce)
        met = _put_if_unchanged(tenant, debounce, arrival.group, before, single_attempt=single_attempt)
        if met is None:
            return Arrived(
                seq=arrival.seq,
                delay_seconds=rules.send_delay(arrival.group, at, debounce),
                superseded=arrival.superseded,
                closed=arrival.closed,
                before=before,
            )
        before = met
    raise DebounceContended(f"debounce key {debounce.key!r}: lost {_ARRIVAL_TRIES} races for its group")


def undo(tenant: str, debounce: Debounce, job_id: str, arrived: Arrived) -> bool:
    """Put the group back as it was before `job_id` arrived, if nothing arrived since (its message could not be sent:
    the job it superseded is its group's latest again). False if the group moved on; then the unsent job is the
    latest of a group nothing runs, or superseded: its previous jobs are skipped naming it (documented)."""
    now = read(tenant, debounce.key)
    if now is None or now.seq != arrived.seq or now.latest != job_id:
        return False
    if arrived.before is None:
        return _delete_if_unchanged(tenant, debounce.key, arrived.seq)
    return _put_if_unchanged(tenant, debounce, arrived.before, now) is None


def _put_if_unchanged(
    tenant: str, debounce: Debounce, group: Group, seen: Group | None, *, single_attempt: bool = False
) -> Group | None:
    """Put `group` if the item is still `seen` (its `seq`): None if written, else the group as it is now."""
    params: dict[str, Any] = {
        "TableName": table.name(),
        "Item": _item_of(tenant, debounce.key, group, debounce),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    if seen is None:
        params["ConditionExpression"] = "attribute_not_exists(pk)"
    else:
        params |= {"ConditionExpression": "seq = :seq", "ExpressionAttributeValues": {":seq": {"N": str(seen.seq)}}}
    try:
        _client(single_attempt).put_item(**params)
    except ClientError as error:
        if not is_condition_failure(error):
            raise
        item = error.response.get("Item")
        return _group_of(item) if item else (read(tenant, debounce.key) or Group())
    return None


def _delete_if_unchanged(tenant: str, key: str, seq: int) -> bool:
    try:
        client("dynamodb").delete_item(
            TableName=table.name(),
            Key=_key(tenant, key),
            ConditionExpression="seq = :seq",
            ExpressionAttributeValues={":seq": {"N": str(seq)}},
        )
    except ClientError as error:
        if is_condition_failure(error):
            return False
        raise
    return True


@dataclass(frozen=True)
class Fired:
    """The job was claimed, and its group marked as run, in one transaction: it runs."""


@dataclass(frozen=True)
class RecordExists:
    """The job has a record already (it ran, was cancelled, or was recorded skipped): claim it as any job, which
    answers what it is."""


def fire(
    tenant: str,
    debounce: Debounce,
    job_id: str,
    seq: int,
    now: float,
    claim: dict[str, Any],
    *,
    single_attempt: bool = True,
) -> Fired | RecordExists | Decision:
    """The job `job_id` (arrival `seq`) reached a worker at `now`: Fired if its group lets it run (its `claim`, a
    TransactWriteItems Update of its record conditioned on there being none, made in the same transaction), else
    what its group decides (`NotDue`, `Superseded`, `Unmanaged`), or RecordExists."""
    for _ in range(_FIRE_TRIES):
        group = read(tenant, debounce.key, single_attempt=single_attempt)
        decision = rules.decide(group, job_id, seq, now, debounce)
        if not isinstance(decision, Fire):
            return decision
        ran = _ran_update(tenant, debounce.key, job_id, closed=decision.closed)
        try:
            _client(single_attempt).transact_write_items(TransactItems=[{"Update": claim}, {"Update": ran}])
        except ClientError as error:
            failed = failed_conditions(error, 2)
            if failed is None:
                raise
            if failed[0]:
                return RecordExists()
            continue  # its group changed between the read and the transaction: decide again
        return Fired()
    raise DebounceContended(f"debounce key {debounce.key!r}: its group kept changing as {job_id} tried to run")


def ran_without_a_run(tenant: str, key: str, job_id: str) -> bool:
    """The latest `job_id` ended without running (cancelled before its turn): its group counts it as its run, so its
    superseded jobs name it and a later arrival opens a new group. False if it is not its group's latest."""
    try:
        client("dynamodb").update_item(**_ran_update(tenant, key, job_id, closed=False))
    except ClientError as error:
        if is_condition_failure(error):
            return False
        raise
    return True


def _ran_update(tenant: str, key: str, job_id: str, *, closed: bool) -> dict[str, Any]:
    """The group's change as `job_id` runs: a closed group's latest is marked ran (kept, so the jobs it superseded
    still name it); the current group's latest becomes `fired`, and the group waits for its next arrival."""
    if closed:
        return {
            "TableName": table.name(),
            "Key": _key(tenant, key),
            "UpdateExpression": "SET closed.#job.r = :ran",
            "ConditionExpression": "attribute_exists(closed.#job) AND attribute_not_exists(closed.#job.r)",
            "ExpressionAttributeNames": {"#job": job_id},
            "ExpressionAttributeValues": {":ran": {"BOOL": True}},
        }
    return {
        "TableName": table.name(),
        "Key": _key(tenant, key),
        "UpdateExpression": "SET fired = :job, fired_first_seq = first_seq REMOVE latest",
        "ConditionExpression": "latest = :job",
        "ExpressionAttributeValues": {":job": {"S": job_id}},
    }
