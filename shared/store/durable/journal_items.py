"""A durable job's journal: every step's record in one item, `journal#<job id>`, and results too large for
it in items of their own, `stepresult#<job id>#<nonce>`. See docs/decisions/durable-jobs.md "The journal".

Each step is one top-level attribute of the journal (`s<digest of its id>`), a map holding its record
(shared/durable/steps.py `StepRecord`) in short names; the item also counts its entries (`ne`), the bytes
its entries take (`ib`, an estimate on the high side) and the bytes of every result the job recorded (`rb`,
spilled ones too). Every write of a step is one conditional UpdateItem of the journal that applies one
`steps.transition`, pinned on the step being as the writer knew it:

- the worker, which read the journal when the attempt began and made every later write itself, writes the
  whole record, on the condition that the step's `writer` nonce (or its absence) and the entry count are
  what it knows: a step is recorded once, in the place it first ran;
- a resolution (an event, a token's completion, a child's end, a timer) writes blind, without reading: on
  the condition that the step is `waiting` for what it resolves (or, for a timer, that its `until` has
  passed), so of an event and a timeout racing, one wins and the other learns it lost.

A failed condition returns the item as it was (ALL_OLD, no read): `transition` on that record says whether
the write is there already (its answer was lost and botocore sent it again: `AlreadyDone`), refused, or
worth trying again. A result over STEP_RESULT_INLINE_BYTES, or one that would take the journal past
JOURNAL_MAX_BYTES, goes first to an item of its own, named by a nonce the journal's record then names:
an attempt that lost its write leaves an orphan, which expires.

Journal items go straight to DynamoDB, not through the status cache (DAX holds job items only).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from shared import settings
from shared.aws.clients import client, single_attempt_client
from shared.durable import limits, steps
from shared.durable.steps import (
    AlreadyDone,
    Applied,
    Change,
    Refused,
    Resolved,
    StepKind,
    StepRecord,
    StepStatus,
    Transition,
)
from shared.store import keys, table
from shared.store.conditional import Refused as WriteRefused
from shared.store.conditional import update_or_refused
from shared.store.durable import step_codec
from shared.store.durable.step_codec import number

_DAY = 86_400
# A journal outlives its job's record (kept FINISHED_JOB_TTL_DAYS after the job ends, and a retry of a dead
# job resumes from the journal): each write keeps it that long past the write, or past the step's wait.
_KEPT_SECONDS = (settings.FINISHED_JOB_TTL_DAYS + 1) * _DAY
_WRITE_TRIES = 4  # each failed condition learns the step as it is: a try or two in practice


@dataclass
class Journal:
    """A job's steps as the journal holds them (with their results, where `read` fetched them)."""

    job_id: str
    tenant: str
    steps: dict[str, StepRecord] = field(default_factory=dict)  # by step id
    item_bytes: int = 0
    result_bytes: int = 0

    @property
    def entries(self) -> int:
        return len(self.steps)

    def ordered(self) -> list[StepRecord]:
        return sorted(self.steps.values(), key=lambda record: record.n)

    def views(self) -> list[dict[str, Any]]:
        """`"steps"` of the job's view: in the order they first ran."""
        return [record.view() for record in self.ordered()]

    def waiting(self) -> StepRecord | None:
        return next((record for record in self.ordered() if record.status is StepStatus.WAITING), None)

    def replayed(self, run: int, token_url: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
        """What the jobs function gets to replay run `run` (shared/durable/replay.py `Recorded`): every step
        it takes as recorded, every step waiting in this run, and every failed step (it runs again).
        `token_url`: a token's capability URL from its id, which the journal never stores (create_token's
        recorded result is `{"id"}`; the code gets `{"id", "url"}`)."""
        sent = []
        for record in self.ordered():
            if record.recorded_in(run):
                result = json.loads(record.result_json) if record.result_json is not None else None
                if record.kind is StepKind.CREATE_TOKEN and isinstance(result, dict) and token_url is not None:
                    result = {"id": result["id"], "url": token_url(result["id"])}
                sent.append(_wire(record, result=result, error=record.error))
            elif record.status is StepStatus.WAITING and record.run == run:
                sent.append(_wire(record))
            elif record.status is StepStatus.FAILED:
                sent.append(_wire(record, error=record.error))
        return sent

    def with_record(self, record: StepRecord, *, item_bytes: int, result_bytes: int) -> None:
        self.steps[record.id] = record
        self.item_bytes = item_bytes
        self.result_bytes = result_bytes


def _wire(record: StepRecord, **extra: Any) -> dict[str, Any]:
    return {"id": record.id, "kind": str(record.kind), "status": str(record.status)} | {
        name: value for name, value in extra.items() if value is not None
    }


def _dynamodb(single_attempt: bool) -> Any:
    return single_attempt_client("dynamodb") if single_attempt else client("dynamodb")


def _key(job_id: str) -> dict[str, Any]:
    return keys.item_key(keys.journal_key(job_id))


def _spill_key(job_id: str, nonce: str) -> dict[str, Any]:
    return keys.item_key(keys.step_result_key(job_id, nonce))


# Reading ----------------------------------------------------------------------------------------------


def read(job_id: str, *, results: bool = True, single_attempt: bool = False) -> Journal | None:
    """The job's journal (a consistent read), or None if it has recorded nothing. `results`: fetch the results
    that live in items of their own (replay needs them; a view of the steps does not)."""
    item = _dynamodb(single_attempt).get_item(TableName=table.name(), Key=_key(job_id), ConsistentRead=True).get("Item")
    if not item:
        return None
    journal = _journal(job_id, item)
    if results:
        for record in list(journal.steps.values()):
            if record.spill is not None and record.result_json is None:
                journal.steps[record.id] = replace(
                    record, result_json=_read_spill(job_id, record.spill, single_attempt=single_attempt)
                )
    return journal


def _journal(job_id: str, item: dict[str, Any]) -> Journal:
    records = [step_codec.decode(value) for name, value in item.items() if name.startswith("s") and "M" in value]
    return Journal(
        job_id=job_id,
        tenant=item.get("tenant", {}).get("S", ""),
        steps={record.id: record for record in records},
        item_bytes=int(item.get("ib", {"N": "0"})["N"]),
        result_bytes=int(item.get("rb", {"N": "0"})["N"]),
    )


def _read_spill(job_id: str, nonce: str, *, single_attempt: bool) -> str:
    item = (
        _dynamodb(single_attempt)
        .get_item(TableName=table.name(), Key=_spill_key(job_id, nonce), ConsistentRead=True)
        .get("Item")
    )
    if not item:
        # Written before the journal named it, and kept as long: only a table restored in part lacks it.
        raise LookupError(f"job {job_id}: a step's result (stepresult#{nonce}) is missing")
    return str(item["r"]["S"])


def _write_spill(job_id: str, tenant: str, result_json: str, expires_at: int, *, single_attempt: bool) -> str:
    nonce = secrets.token_hex(8)
    _dynamodb(single_attempt).put_item(
        TableName=table.name(),
        Item=_spill_key(job_id, nonce)
        | {"tenant": {"S": tenant}, "r": {"S": result_json}, "expires_at": {"N": str(expires_at)}},
    )
    return nonce


# Writing ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TooMuch:
    """The write would take the job past a limit (its steps, or its recorded results): nothing written."""

    reason: str


def record(
    journal: Journal,
    step_id: str,
    change: Change,
    *,
    run: int,
    now: float,
    single_attempt: bool = False,
) -> Transition | TooMuch:
    """The worker's write of a step it ran, failed in, or suspended at, from the journal as it knows it
    (`journal` is brought up to date with what the store holds after the write)."""
    writer = secrets.token_hex(6)  # one for every try: a try applied whose answer was lost finds it there
    confirmed = False  # whether `journal` holds the step as the store does (after a failed condition or a read)
    for _ in range(_WRITE_TRIES):
        current = journal.steps.get(step_id)
        decided = steps.transition(current, change, step_id=step_id, n=journal.entries, run=run, writer=writer, now=now)
        if isinstance(decided, AlreadyDone) and not confirmed and decided.record.writer != writer:
            # "Waiting already" from what the journal held when it was read: a resolution may have come for the
            # step since. Decided on the store's own record instead (a rare path: a job woken while it waits).
            _learn(journal, _read_item(journal.job_id), step_id)
            confirmed = True
            continue
        if not isinstance(decided, Applied):
            return decided
        if current is None and journal.entries >= limits.MAX_STEPS_PER_JOB:
            return TooMuch(f"a job records at most {limits.MAX_STEPS_PER_JOB} steps; step {step_id!r} is one more")
        added = decided.record.result_bytes - (current.result_bytes if current else 0)
        if journal.result_bytes + added > limits.MAX_RECORDED_BYTES:
            return TooMuch(
                f"step {step_id!r}: the job's recorded results would be {journal.result_bytes + added} bytes,"
                f" over the limit of {limits.MAX_RECORDED_BYTES}"
            )
        placed = _placed(journal, decided.record, current, now, single_attempt=single_attempt)
        expression = _Expression(step_id)
        expression.set_value("#e", step_codec.encode(placed))
        expression.add("ib", step_codec.entry_bytes(placed) - (step_codec.entry_bytes(current) if current else 0))
        expression.add("rb", added)
        expression.set_value("tenant", {"S": journal.tenant})
        expression.set_value("expires_at", number(_expires(placed, now)))
        if current is None:
            expression.condition("attribute_not_exists(#e)")
            entries, known = expression.name("ne"), expression.value(number(journal.entries))
            expression.condition(f"(attribute_not_exists({entries}) OR {entries} = {known})")
            expression.add("ne", 1)
        else:
            expression.condition(f"{expression.path('w')} = {expression.value({'S': current.writer})}")
        answer = _update(journal.job_id, expression, single_attempt=single_attempt)
        if isinstance(answer, WriteRefused):
            _learn(journal, answer.item, step_id)
            confirmed = True
            continue
        journal.with_record(placed, item_bytes=_int(answer, "ib"), result_bytes=_int(answer, "rb"))
        return Applied(placed)
    raise RuntimeError(f"job {journal.job_id}: step {step_id!r} kept changing while it was recorded")


def resolve(
    job_id: str,
    tenant: str,
    step_id: str,
    change: Resolved | steps.TimedOut | steps.Cancelled,
    *,
    now: float,
    single_attempt: bool = False,
) -> Transition | TooMuch:
    """A resolution's write of a waiting step, made without reading the journal: the step must be waiting for
    what `change` resolves (a timer: its `until` passed). Applied once; AlreadyDone for the same resolution
    told again; Refused with the step as it is otherwise (resolved already, waiting for something else)."""
    attribute = steps.attribute_of(step_id)
    writer = secrets.token_hex(6)
    result_json: str | None = None
    error: str | None = None
    match change:
        case Resolved():
            status = StepStatus.ERRORED if change.error is not None else StepStatus.SUCCEEDED
            by, result_json, error = change.by, change.result_json or "null", change.error
        case steps.TimedOut():
            status, by, result_json = steps.timed_out_status(change.kind), "timeout", "null"
        case steps.Cancelled():
            status, by = StepStatus.CANCELLED, "cancel"
    size = len(result_json.encode()) if result_json is not None else 0
    spill: str | None = None
    if size > limits.STEP_RESULT_INLINE_BYTES:  # result_json is set: large results live in items of their own
        spill = _write_spill(job_id, tenant, result_json or "", int(now) + _KEPT_SECONDS, single_attempt=single_attempt)
    for _ in range(_WRITE_TRIES):
        expression = _Expression(step_id)
        expression.condition(f"{expression.path('st')} = {expression.value({'S': StepStatus.WAITING})}")
        expression.set_value(expression.path("st"), {"S": status})
        expression.set_value(expression.path("w"), {"S": writer})
        expression.set_value(expression.path("t1"), number(now))
        expression.set_value(expression.path("by"), {"S": by})
        expression.set_value("expires_at", number(int(now) + _KEPT_SECONDS))
        expression.remove(expression.path("wt"))
        if isinstance(change, Resolved):
            expression.condition(f"{expression.path('aw')} = {expression.value({'S': change.awaits})}")
        if isinstance(change, steps.TimedOut):
            expression.condition(f"{expression.path('u')} <= {expression.value(number(now))}")
            expression.condition(f"{expression.path('k')} = {expression.value({'S': change.kind})}")
        if error is not None:
            expression.set_value(expression.path("e"), {"S": error[:2000]})
        if result_json is not None:
            rb = expression.name("rb")
            most = expression.value(number(limits.MAX_RECORDED_BYTES - size))
            expression.condition(f"(attribute_not_exists({rb}) OR {rb} <= {most})")
            expression.set_value(expression.path("rb"), number(size))
            expression.add("rb", size)
            if spill is not None:
                expression.set_value(expression.path("sp"), {"S": spill})
            else:
                ib = expression.name("ib")
                room = limits.JOURNAL_MAX_BYTES - size - 64
                expression.condition(f"(attribute_not_exists({ib}) OR {ib} <= {expression.value(number(room))})")
                expression.set_value(expression.path("r"), {"S": result_json})
                expression.add("ib", size + 8)
        answer = _update(job_id, expression, single_attempt=single_attempt, returns="ALL_NEW")
        if not isinstance(answer, WriteRefused):
            return Applied(step_codec.decode(answer[attribute]))
        current = step_codec.decode(answer.item[attribute]) if attribute in answer.item else None
        decided = steps.transition(current, change, step_id=step_id, n=0, run=0, writer=writer, now=now)
        if not isinstance(decided, Applied):
            return decided
        recorded = _int(answer.item, "rb")
        if recorded + size > limits.MAX_RECORDED_BYTES:
            return TooMuch(
                f"step {step_id!r}: the job's recorded results would be {recorded + size} bytes,"
                f" over the limit of {limits.MAX_RECORDED_BYTES}"
            )
        if result_json is None or spill is not None:
            raise RuntimeError(f"job {job_id}: step {step_id!r} refused a resolution its record allows")
        # The journal has no room left for the result: it goes to an item of its own, which the journal names.
        spill = _write_spill(job_id, tenant, result_json, int(now) + _KEPT_SECONDS, single_attempt=single_attempt)
    raise RuntimeError(f"job {job_id}: step {step_id!r} kept changing while it was resolved")


class _Expression:
    """An UpdateItem's expressions, every name and value through a placeholder (several short names the
    journal uses are DynamoDB reserved words). `#e` is the step's attribute."""

    def __init__(self, step_id: str) -> None:
        self.names: dict[str, str] = {"#e": steps.attribute_of(step_id)}
        self.values: dict[str, Any] = {}
        self._sets: list[str] = []
        self._adds: list[str] = []
        self._removes: list[str] = []
        self._conditions: list[str] = []

    def name(self, name: str) -> str:
        placeholder = f"#{name}"
        self.names[placeholder] = name
        return placeholder

    def path(self, field_name: str) -> str:
        """The step's field `field_name` (a short name of the codec)."""
        placeholder = f"#f_{field_name}"
        self.names[placeholder] = field_name
        return f"#e.{placeholder}"

    def value(self, value: dict[str, Any]) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def set_value(self, target: str, value: dict[str, Any]) -> None:
        if not target.startswith("#"):
            target = self.name(target)
        self._sets.append(f"{target} = {self.value(value)}")

    def add(self, name: str, amount: int) -> None:
        """`name` (a top-level counter) grows by `amount`, from 0 if it is not there yet."""
        placeholder = self.name(name)
        self._sets.append(
            f"{placeholder} = if_not_exists({placeholder}, {self.value(number(0))}) + {self.value(number(amount))}"
        )

    def remove(self, target: str) -> None:
        self._removes.append(target)

    def condition(self, text: str) -> None:
        self._conditions.append(text)

    def update(self) -> str:
        text = "SET " + ", ".join(self._sets)
        return text + (" REMOVE " + ", ".join(self._removes) if self._removes else "")

    def condition_text(self) -> str:
        return " AND ".join(self._conditions)


def _placed(
    journal: Journal, record: StepRecord, current: StepRecord | None, now: float, *, single_attempt: bool
) -> StepRecord:
    """The record as the journal will hold it: its result inline if small and the journal has room, else in
    an item of its own (written now, before the journal names it)."""
    if record.result_json is None:
        return replace(record, spill=None)
    size = len(record.result_json.encode())
    room = limits.JOURNAL_MAX_BYTES - journal.item_bytes + (step_codec.entry_bytes(current) if current else 0)
    if size <= limits.STEP_RESULT_INLINE_BYTES and step_codec.entry_bytes(record) <= room:
        return record
    nonce = _write_spill(
        journal.job_id, journal.tenant, record.result_json, _expires(record, now), single_attempt=single_attempt
    )
    return replace(record, result_json=None, spill=nonce)


def _expires(record: StepRecord, now: float) -> int:
    if record.status is StepStatus.WAITING:
        ends = record.until if record.until is not None else now + limits.MAX_WAIT_SECONDS
        return int(max(now, ends)) + _KEPT_SECONDS
    return int(now) + _KEPT_SECONDS


def _learn(journal: Journal, item: dict[str, Any], step_id: str) -> None:
    """Bring the journal's view of `step_id`, its entries and sizes up to what the store holds."""
    if not item:
        return
    held = _journal(journal.job_id, item)
    journal.steps = held.steps | {
        step: record for step, record in journal.steps.items() if step not in held.steps and step != step_id
    }
    if step_id in held.steps:
        known = journal.steps[step_id]
        if known.spill is not None and known.result_json is None:
            journal.steps[step_id] = replace(
                known, result_json=_read_spill(journal.job_id, known.spill, single_attempt=False)
            )
    journal.item_bytes = held.item_bytes
    journal.result_bytes = held.result_bytes


def _update(
    job_id: str, expression: _Expression, *, single_attempt: bool, returns: str = "UPDATED_NEW"
) -> dict[str, Any] | WriteRefused:
    return update_or_refused(
        _dynamodb(single_attempt),
        TableName=table.name(),
        Key=_key(job_id),
        UpdateExpression=expression.update(),
        ConditionExpression=expression.condition_text(),
        ExpressionAttributeNames=expression.names,
        ExpressionAttributeValues=expression.values,
        ReturnValues=returns,
    )


def _read_item(job_id: str) -> dict[str, Any]:
    """The journal as it is, for stores that do not return ALL_OLD on a failed condition."""
    found = client("dynamodb").get_item(TableName=table.name(), Key=_key(job_id), ConsistentRead=True)
    return found.get("Item") or {}


def _int(attributes: dict[str, Any], name: str) -> int:
    return int(attributes[name]["N"]) if name in attributes else 0


__all__ = ["Journal", "Refused", "TooMuch", "read", "record", "resolve"]
