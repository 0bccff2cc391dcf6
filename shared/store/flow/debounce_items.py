"""A debounce key's group, one item per (tenant, key): `debounce#<tenant>#<key>` (shared/flow/debounce.py `Group`).

Attributes: `seq` (arrivals so far), `revision` (writes so far: each write is conditioned on the one it read),
`latest`, `arrived_at`, `first_at`, `first_seq` (the current group), `ended` (a map: the latest of each group that
ended -> {f, l: its first and last arrival numbers, t: when it ended, r: true once that latest ran}; every one whose
latest has not run, and the newest 8 that ran), and `expires_at` (the table's TTL: long enough for a superseded
job's message, which may come as late as the queue keeps it, to find its group).

- **An arrival** (`arrive`: the API, for a job it enqueues; the worker, for a schedule's firing or an event's
  job) is one strongly consistent read and one write of the whole group conditioned on its `revision` being
  what was read; a writer that lost the race computes again from the group its failed write returned. The job's message
  carries its arrival number (`seq`), and is sent after the write, delayed until its group is due.
- **A run** (`settle`) is one write marking the group's latest as run (conditioned on the group's revision), then
  the job's claim as any job's: a group marks one run however many deliveries ask, and a worker that dies between
  the two leaves a group that ran, whose job's next delivery is claimed as any job's.
- **A superseded job** is decided from one read (`settle` answers `Superseded`); its `skipped` record
  (`record_superseded`) is one conditional put.

Cost per debounced job: its arrival, one read and one write (the group, under 1 KB: 1 RRU, 1 WRU); then
the job that runs, one read and one write of the group before its claim; each superseded one, one read and its
`skipped` record (1 WRU for a small payload).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.aws.clients import client, is_condition_failure, single_attempt_client
from shared.errors import Unavailable
from shared.flow import debounce as rules
from shared.flow.debounce import Debounce, Decision, Ended, Fire, Group
from shared.model.message import JobMessage
from shared.store import keys, table
from shared.store.jobs import job_store

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

    ended = {
        job: Ended(
            first_seq=int(entry["M"]["f"]["N"]),
            last_seq=int(entry["M"]["l"]["N"]),
            ended_at=float(entry["M"]["t"]["N"]),
            ran=entry["M"].get("r", {}).get("BOOL", False),
        )
        for job, entry in item.get("ended", {}).get("M", {}).items()
    }
    return Group(
        seq=int(number("seq")),
        latest=item["latest"]["S"] if "latest" in item else None,
        arrived_at=number("arrived_at"),
        first_at=number("first_at"),
        first_seq=int(number("first_seq")),
        ended=ended,
        revision=int(number("revision")),
    )


def _item_of(tenant: str, key: str, group: Group, debounce: Debounce) -> dict[str, Any]:
    item: dict[str, Any] = _key(tenant, key) | {
        "seq": {"N": str(group.seq)},
        "revision": {"N": str(group.revision + 1)},
        "arrived_at": {"N": repr(group.arrived_at)},
        "first_at": {"N": repr(group.first_at)},
        "first_seq": {"N": str(group.first_seq)},
        "ended": {
            "M": {
                job: {
                    "M": {
                        "f": {"N": str(entry.first_seq)},
                        "l": {"N": str(entry.last_seq)},
                        "t": {"N": repr(entry.ended_at)},
                    }
                    | ({"r": {"BOOL": True}} if entry.ran else {})
                }
                for job, entry in group.ended.items()
            }
        },
        "expires_at": {"N": str(math.ceil(rules.due_at(group, debounce) + rules.CLOSED_KEPT_SECONDS))},
    }
    if group.latest is not None:
        item["latest"] = {"S": group.latest}
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
        if before is not None and job_id in (before.latest, *before.ended):
            # Recorded already: a write whose answer was lost, retried (by botocore, or by the client under its
            # idempotency key). It stays one arrival, which an undo leaves as it is.
            # Its message carries the arrival number it was recorded with: the latest's is `seq`, an ended group's
            # latest's is its group's last.
            if before.latest == job_id:
                seq, due = before.seq, rules.send_delay(before, at, debounce)
            else:
                seq, due = before.ended[job_id].last_seq, 0
            return Arrived(seq=seq, delay_seconds=due, superseded=None, closed=None, before=before)
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
        return _delete_if_unchanged(tenant, debounce.key, now.revision)
    return _put_if_unchanged(tenant, debounce, replace(arrived.before, revision=now.revision), now) is None


def _put(tenant: str, debounce: Debounce, group: Group, seen: Group | None) -> dict[str, Any]:
    """The Put of `group` (its revision the next after `group.revision`) if the item is still `seen`."""
    params: dict[str, Any] = {"TableName": table.name(), "Item": _item_of(tenant, debounce.key, group, debounce)}
    if seen is None:
        return params | {"ConditionExpression": "attribute_not_exists(pk)"}
    return params | {
        "ConditionExpression": "revision = :revision",
        "ExpressionAttributeValues": {":revision": {"N": str(seen.revision)}},
    }


def _put_if_unchanged(
    tenant: str, debounce: Debounce, group: Group, seen: Group | None, *, single_attempt: bool = False
) -> Group | None:
    """Put `group` if the item is still `seen` (its revision): None if written, else the group as it is now."""
    params = _put(tenant, debounce, group, seen) | {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    try:
        _client(single_attempt).put_item(**params)
    except ClientError as error:
        if not is_condition_failure(error):
            raise
        item = error.response.get("Item")
        return _group_of(item) if item else (read(tenant, debounce.key) or Group())
    return None


def _delete_if_unchanged(tenant: str, key: str, revision: int) -> bool:
    try:
        client("dynamodb").delete_item(
            TableName=table.name(),
            Key=_key(tenant, key),
            ConditionExpression="revision = :revision",
            ExpressionAttributeValues={":revision": {"N": str(revision)}},
        )
    except ClientError as error:
        if is_condition_failure(error):
            return False
        raise
    return True


@dataclass(frozen=True)
class Fired:
    """The job's group marked it as its run: it is claimed as any job, whose claim decides whether it runs."""


def settle(
    tenant: str, debounce: Debounce, job_id: str, seq: int, now: float, *, single_attempt: bool = True
) -> Fired | Decision:
    """The job `job_id` (arrival `seq`) reached a worker at `now`: Fired once its group marked it as its run (a write
    conditioned on the group being as read, so a group marks one run however many workers ask, and an arrival in
    between makes it decide again), else what its group decides (`NotDue`, `Superseded`, `Unmanaged`).

    The mark goes before the claim: a worker that dies between them leaves a group that ran, and the job's next
    delivery finds its group has no say (`Unmanaged`) and claims it as any job, so it still runs, once."""
    for _ in range(_FIRE_TRIES):
        group = read(tenant, debounce.key, single_attempt=single_attempt)
        decision = rules.decide(group, job_id, seq, now, debounce)
        if not isinstance(decision, Fire) or group is None:
            return decision
        ran = rules.ran(group, job_id, now)
        if _put_if_unchanged(tenant, debounce, ran, group, single_attempt=single_attempt) is not None:
            continue  # its group changed between the read and the write: decide again
        return Fired()
    raise DebounceContended(f"debounce key {debounce.key!r}: its group kept changing as {job_id} tried to run")


def record_superseded(message: JobMessage, reason: str, by: str | None, now: float) -> bool:
    """Record the superseded job `message` as `skipped`, its `reason` naming `by`. False if it has a record already
    (it ran, or was recorded already): it is left as it is, and claimed as any job."""
    return job_store.record_skipped(message, reason, by, now, single_attempt=True)


def ran_without_a_run(tenant: str, debounce: Debounce, job_id: str, now: float) -> bool:
    """The latest `job_id` ended without running (cancelled before its turn): its group counts it as its run, so its
    superseded jobs name it and a later arrival opens a new group. False if it is not its group's latest."""
    for _ in range(_FIRE_TRIES):
        group = read(tenant, debounce.key)
        if group is None or (group.latest != job_id and job_id not in group.ended):
            return False
        if _put_if_unchanged(tenant, debounce, rules.ran(group, job_id, now), group) is None:
            return True
    raise DebounceContended(f"debounce key {debounce.key!r}: its group kept changing as {job_id} was cancelled")


def arrive_message(message: JobMessage, now: float) -> tuple[JobMessage, Arrived]:
    """A debounced job's arrival as the API enqueues it: its message with its arrival number, and its arrival (its
    `delay_seconds`: its message's delay until its group is due)."""
    assert message.debounce is not None
    arrived = arrive(message.tenant, message.debounce, message.id, now)
    return replace(message, debounce_seq=arrived.seq), arrived


def undo_unsent(message: JobMessage, arrived: Arrived) -> None:
    """The job's message was not sent: its group goes back as it was, if nothing arrived since (best effort: the
    caller is told the job was not enqueued either way)."""
    assert message.debounce is not None
    with contextlib.suppress(ClientError, BotoCoreError):
        undo(message.tenant, message.debounce, message.id, arrived)
