"""A batch's members' states, kept in its counts item (shared/store/batches/batch_items.py).
See docs/decisions/batches.md.

The counts item holds one short attribute per member that has left `pending`: `j<index in base 36>` = its
state, a letter (S succeeded, D dead, C cancelled, K skipped, P pending again after a retry) and the run it belongs to
(the job record's `retries`, left out when 0). Every change of a member's state is one conditional write
(`mark`) that sets the member's attribute *from the state it was in* and moves one unit between two
counters, so the counts always equal the members' states, and repeating a mark (a redelivery, a retried
write, a crash between the job's record and its batch's) changes nothing. A cancel marks its members in
chunks (`mark_cancelled`), and reads them all with the counts (`get_with_members`).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from shared.aws.clients import client, is_condition_failure
from shared.store import table
from shared.store.batches import batch_items
from shared.store.batches.batch_items import BatchRecord
from shared.store.conditional import conditional_update
from shared.store.jobs import job_items

PENDING, DONE, DEAD, CANCELLED_JOB, SKIPPED_JOB = "P", "S", "D", "C", "K"
_COUNTER_OF = {
    PENDING: "pending",
    DONE: "succeeded",
    DEAD: "dead",
    CANCELLED_JOB: "cancelled",
    SKIPPED_JOB: "skipped",
}
_DIGITS = string.digits + string.ascii_lowercase


@dataclass(frozen=True)
class MemberState:
    """A member's state in its batch: a letter (PENDING, DONE, DEAD, CANCELLED_JOB, SKIPPED_JOB) and its run."""

    letter: str
    generation: int = 0

    def encoded(self) -> str:
        return self.letter + (str(self.generation) if self.generation else "")

    @classmethod
    def decoded(cls, text: str | None) -> MemberState:
        return cls(PENDING) if text is None else cls(text[0], int(text[1:] or 0))


def member_attribute(index: int) -> str:
    """The counts item's attribute for member `index`: `j` and the index in base 36 (1,000 -> "jrs")."""
    digits = ""
    while True:
        index, rest = divmod(index, 36)
        digits = _DIGITS[rest] + digits
        if index == 0:
            return "j" + digits


def mark(batch_id: str, index: int, state: MemberState, *, single_attempt: bool = False) -> BatchRecord | None:
    """Member `index` is in `state` now: its attribute set and one unit moved between two counts, in one
    conditional write from the state it was in. Idempotent: a member already in `state`, or in a later
    run's state (a stale delivery), is left as it is. The batch after; None if there is no such batch."""
    name = member_attribute(index)
    # The usual case first: a member leaving `pending` of its run, or a retried dead member reopening.
    if state.letter == PENDING:
        assumed = MemberState(DEAD, max(state.generation - 1, 0))
    else:
        assumed = MemberState(PENDING, state.generation)
    for _ in range(4):  # each failed try learns the member's real state: at most a few
        answer = _move(batch_id, name, assumed, state, single_attempt)
        if isinstance(answer, BatchRecord):
            return answer
        if not answer:
            return None  # no such batch
        actual = MemberState.decoded(job_items.as_str(answer, name))
        if actual == state or actual.generation > state.generation:
            return batch_items.record_of(answer)  # counted already, or a later run's state that this one must not undo
        if actual.generation == state.generation and actual.letter != PENDING:
            return batch_items.record_of(answer)  # a run ends once: its first recorded end stands (as the job record's)
        assumed = actual
    raise RuntimeError(f"batch {batch_id}: member {index} kept changing while it was marked {state.encoded()}")


def _move(
    batch_id: str, name: str, old: MemberState, new: MemberState, single_attempt: bool
) -> BatchRecord | dict[str, Any]:
    """One member from `old` to `new`: the batch after, or the item as it was if it was not in `old`
    ({} if there is no batch)."""
    moves = old.letter != new.letter  # a pending member of one run pending in the next moves no unit
    names = {"#member": name} | ({"#to": _COUNTER_OF[new.letter], "#from": _COUNTER_OF[old.letter]} if moves else {})
    counted = " ADD #to :one, #from :minus" if moves else ""
    if old == MemberState(PENDING):
        in_old = "attribute_not_exists(#member)"
        values: dict[str, Any] = {}
    else:
        in_old = "#member = :old"
        values = {":old": {"S": old.encoded()}}
    if new == MemberState(PENDING):
        update = "REMOVE #member" + counted
    else:
        update = "SET #member = :new" + counted
        values[":new"] = {"S": new.encoded()}
    if moves:
        values |= {":one": {"N": "1"}, ":minus": {"N": "-1"}}
    try:
        answer = batch_items.dynamodb(single_attempt).update_item(
            TableName=table.name(),
            Key=batch_items.key(batch_id),
            UpdateExpression=update,
            ConditionExpression=f"attribute_exists(pk) AND {in_old}",
            ExpressionAttributeNames=names,
            **({"ExpressionAttributeValues": values} if values else {}),
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if not is_condition_failure(error):
            raise
        return error.response.get("Item") or _read(batch_id, single_attempt)
    return batch_items.record_of(answer["Attributes"])


def _read(batch_id: str, single_attempt: bool) -> dict[str, Any]:
    # For stores that do not return ALL_OLD on a failed condition.
    found = batch_items.dynamodb(single_attempt).get_item(
        TableName=table.name(), Key=batch_items.key(batch_id), ConsistentRead=True
    )
    return found.get("Item") or {}


# The conditions of a write that sets many members at once stay within DynamoDB's 4 KB expression limit.
_MEMBERS_PER_WRITE = 80


def mark_cancelled(batch_id: str, members: list[tuple[int, int]]) -> None:
    """Members (index, run) cancelled while pending: marked together, up to 80 a write. A write whose
    condition fails (a member moved meanwhile) falls back to one `mark` per member of it."""
    for start in range(0, len(members), _MEMBERS_PER_WRITE):
        chunk = members[start : start + _MEMBERS_PER_WRITE]
        if not _cancel_together(batch_id, chunk):
            for index, generation in chunk:
                mark(batch_id, index, MemberState(CANCELLED_JOB, generation))


def _cancel_together(batch_id: str, chunk: list[tuple[int, int]]) -> bool:
    names = {f"#m{n}": member_attribute(index) for n, (index, _) in enumerate(chunk)}
    values: dict[str, Any] = {":count": {"N": str(len(chunk))}, ":minus": {"N": str(-len(chunk))}}
    conditions, sets = ["attribute_exists(pk)"], []
    for n, (_, generation) in enumerate(chunk):
        values[f":c{n}"] = {"S": MemberState(CANCELLED_JOB, generation).encoded()}
        sets.append(f"#m{n} = :c{n}")
        if generation:
            values[f":p{n}"] = {"S": MemberState(PENDING, generation).encoded()}
            conditions.append(f"#m{n} = :p{n}")
        else:
            conditions.append(f"attribute_not_exists(#m{n})")
    return conditional_update(
        client("dynamodb"),
        TableName=table.name(),
        Key=batch_items.key(batch_id),
        UpdateExpression=f"SET {', '.join(sets)} ADD #cancelled :count, #pending :minus",
        ConditionExpression=" AND ".join(conditions),
        ExpressionAttributeNames=names | {"#cancelled": "cancelled", "#pending": "pending"},
        ExpressionAttributeValues=values,
    )


_MEMBER_ATTRIBUTE = re.compile(r"j[0-9a-z]{1,3}")


@dataclass(frozen=True)
class BatchWithMembers:
    batch: BatchRecord
    states: dict[int, MemberState]  # each member that has left `pending` of its first run

    def pending(self) -> list[tuple[int, int]]:
        """The members still pending, as (index, run), in order: none has ended (some may be running)."""
        found = []
        for index in range(self.batch.total):
            state = self.states.get(index, MemberState(PENDING))
            if state.letter == PENDING:
                found.append((index, state.generation))
        return found


def get_with_members(batch_id: str) -> BatchWithMembers | None:
    """The batch and its members' states, in one consistent read of the counts item (never larger than
    ~0.4 KB plus ~4 bytes per member); None if there is no such batch."""
    item = (
        client("dynamodb")
        .get_item(TableName=table.name(), Key=batch_items.key(batch_id), ConsistentRead=True)
        .get("Item")
    )
    if not item:
        return None
    states = {
        int(name[1:], 36): MemberState.decoded(value["S"])
        for name, value in item.items()
        if _MEMBER_ATTRIBUTE.fullmatch(name)
    }
    return BatchWithMembers(batch_items.record_of(item), states)
