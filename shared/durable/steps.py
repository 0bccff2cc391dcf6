"""A durable job's steps: what each records, and the one state machine every write of a step follows.

A **step** is one call of a JobContext durable method with a step id: `step` (a function's result),
`sleep`, `wait_for_event`, `create_token`, `wait_for_token`, `run_job`, `run_jobs`. Its **record**
lives in the job's journal (shared/store/durable/journal_items.py) and moves only along `transition`:

    (none) ──ran──────────▶ succeeded (its result; a token's {"id", "url"})
    (none) ──ran, caught──▶ errored  (the job's code caught its failure and went on: raised again on replay)
    (none) ──failed───────▶ failed ──failed──▶ failed (attempts + 1) ──ran──▶ succeeded | errored
    (none) ──suspended────▶ waiting (until, awaits) ──resolved──▶ succeeded (data) | errored (a child's end)
                                                    ──until passed──▶ timed_out (None); a sleep: succeeded
                                                    ──cancelled (the job was)──▶ cancelled

`succeeded` and `timed_out` are final in every run of the job. `errored` and `cancelled` are final within
the run that recorded them; a later run (a retry of the dead or cancelled job) takes the step up again,
as it does a step left `waiting` by an earlier run. Every write carries a fresh `writer` nonce: a write
applied whose answer was lost finds its own nonce when it is sent again, and is done (`AlreadyDone`), never
applied twice. A resolution names what it resolves (`awaits`: the event wait, the token, the child) and a
timeout needs the step's `until` to have passed, so a stale resolution or timer refuses itself.

This module is pure (no AWS): the store applies `transition` inside a conditional write, the jobs function
and the worker use the limits below, and the tests run it as the model.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from shared.durable import limits


class StepKind(StrEnum):
    STEP = "step"
    SLEEP = "sleep"
    WAIT_FOR_EVENT = "wait_for_event"
    CREATE_TOKEN = "create_token"
    WAIT_FOR_TOKEN = "wait_for_token"
    RUN_JOB = "run_job"
    RUN_JOBS = "run_jobs"


# What a waiting job's view says it waits for (`"waiting_for": {"kind": ...}`), by the step it waits in.
WAITING_FOR = {
    StepKind.SLEEP: "sleep",
    StepKind.WAIT_FOR_EVENT: "event",
    StepKind.WAIT_FOR_TOKEN: "token",
    StepKind.RUN_JOB: "job",
    StepKind.RUN_JOBS: "job",
}


class StepStatus(StrEnum):
    FAILED = "failed"  # its function raised and the attempt failed: it runs again on the next attempt
    SUCCEEDED = "succeeded"  # recorded: its result (a sleep's None, an event's data, a child's result)
    ERRORED = "errored"  # its failure was caught by the job's code (or a child failed): raised again on replay
    WAITING = "waiting"  # a sleep or a wait, registered; the job holds nothing while it waits
    TIMED_OUT = "timed_out"  # a wait whose timeout passed first: its result is None
    CANCELLED = "cancelled"  # the job was cancelled while this step waited

    @property
    def recorded(self) -> bool:
        """What replay returns without running the step again (in the run that recorded it, for errored)."""
        return self in (StepStatus.SUCCEEDED, StepStatus.TIMED_OUT, StepStatus.ERRORED)


FINAL_IN_EVERY_RUN = (StepStatus.SUCCEEDED, StepStatus.TIMED_OUT)
FINAL_IN_ITS_RUN = (StepStatus.ERRORED, StepStatus.CANCELLED, StepStatus.WAITING)


@dataclass(frozen=True)
class StepRecord:
    """One step as the journal holds it. `result_json`: the recorded result as stored (JSON text), None
    while there is none (or when it lives in an item of its own: `spill`)."""

    id: str
    kind: StepKind
    status: StepStatus
    n: int  # its place in the order steps first ran: 0, 1, 2 ...
    attempts: int = 1  # the attempts that ran it (a wait: the times it was taken up)
    run: int = 0  # the job's run (its record's `retries`) that wrote its status
    writer: str = ""  # the nonce of the write that made this record
    started_at: float | None = None
    finished_at: float | None = None
    result_json: str | None = None
    spill: str | None = None  # the nonce naming the item that holds a result too large for the journal
    result_bytes: int = 0
    error: str | None = None
    until: float | None = None  # waiting: when it times out or a sleep ends (epoch seconds); None: no timeout
    awaits: str | None = None  # waiting: what resolves it ("event", "token:<id>", "job:<id>", "jobs:<id>")
    wait: dict[str, Any] | None = None  # waiting: what the job's view shows it waits for
    resolved_by: str | None = None  # what resolved it: an event's id, "token", the child's id, "timeout"

    def view(self) -> dict[str, Any]:
        """What a job's view shows of it (`"steps": [...]`, in `n` order)."""
        return {
            "id": self.id,
            "kind": str(self.kind),
            "status": str(self.status),
            "attempts": self.attempts,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }

    def recorded_in(self, run: int) -> bool:
        """Whether replay in `run` takes this record as the step's (else the step runs, or waits, again)."""
        if self.status in FINAL_IN_EVERY_RUN:
            return True
        return self.status is StepStatus.ERRORED and self.run == run


# What can happen to a step --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    """The step ran in the jobs function (or the worker minted its token): `result_json` (succeeded), or
    `error` when its failure was caught by the code (errored). `ms`: how long it ran."""

    kind: StepKind
    result_json: str | None = None
    error: str | None = None
    ms: float = 0.0


@dataclass(frozen=True)
class Failed:
    """The step's function raised and the attempt failed with it (not caught)."""

    kind: StepKind
    error: str


@dataclass(frozen=True)
class Suspended:
    """The code reached a sleep or a wait: the step waits until `until` (None: no timeout) for `awaits`."""

    kind: StepKind
    until: float | None
    awaits: str
    wait: dict[str, Any]


@dataclass(frozen=True)
class Resolved:
    """What the step waited for came: `awaits` must be what it waits for. `error`: a child's failure (then
    `result_json` holds the failed children, [{"id", "status", "error"}])."""

    awaits: str
    by: str
    result_json: str | None = "null"
    error: str | None = None


@dataclass(frozen=True)
class TimedOut:
    """The step's `until` has passed: a sleep is over (succeeded), or a wait timed out (timed_out, None).
    `kind`: the step's, as the timer knows it (the job's `waiting_for`)."""

    kind: StepKind


@dataclass(frozen=True)
class Cancelled:
    """The job was cancelled while the step waited."""


Change = Ran | Failed | Suspended | Resolved | TimedOut | Cancelled


@dataclass(frozen=True)
class Applied:
    record: StepRecord


@dataclass(frozen=True)
class AlreadyDone:
    """This very write is there already (its answer was lost, and it was sent again), or it changes nothing."""

    record: StepRecord


@dataclass(frozen=True)
class Refused:
    """The step is not in a state this change applies to; `record` is the step as it is."""

    reason: str
    record: StepRecord | None


Transition = Applied | AlreadyDone | Refused


def transition(
    current: StepRecord | None,
    change: Change,
    *,
    step_id: str,
    n: int,
    run: int,
    writer: str,
    now: float,
) -> Transition:
    """The step after `change`, from `current` (None: not recorded). `n`: its place if it is new; `run`: the
    job's run making the change; `writer`: this write's nonce. The store writes `Applied.record` on the
    condition that the step is still `current`."""
    if current is not None and current.writer == writer:
        return AlreadyDone(current)
    match change:
        case Ran() | Failed():
            return _ran(current, change, step_id=step_id, n=n, run=run, writer=writer, now=now)
        case Suspended():
            return _suspended(current, change, step_id=step_id, n=n, run=run, writer=writer, now=now)
        case Resolved():
            return _resolved(current, change, writer=writer, now=now)
        case TimedOut():
            if current is None or current.status is not StepStatus.WAITING:
                return _refused("it is not waiting", current)
            if current.kind is not change.kind:
                return _refused(f"it is a {current.kind}, not a {change.kind}", current)
            if current.until is None or current.until > now:
                return _refused("its time has not come", current)
            return Applied(
                _ended(current, timed_out_status(current.kind), writer, now, result_json="null", by="timeout")
            )
        case Cancelled():
            if current is None or current.status is not StepStatus.WAITING:
                return _refused("it is not waiting", current)
            return Applied(_ended(current, StepStatus.CANCELLED, writer, now, by="cancel"))
    raise AssertionError(f"unexpected change {change!r}")


def timed_out_status(kind: StepKind) -> StepStatus:
    """What a step becomes when its `until` passes: a sleep is over; a wait answers None."""
    return StepStatus.SUCCEEDED if kind is StepKind.SLEEP else StepStatus.TIMED_OUT


def _taken_up_again(current: StepRecord, run: int) -> bool:
    """A step an earlier run left errored, cancelled or waiting: this run takes it up as if new."""
    return current.status in FINAL_IN_ITS_RUN and current.run < run


def _ran(
    current: StepRecord | None, change: Ran | Failed, *, step_id: str, n: int, run: int, writer: str, now: float
) -> Transition:
    if current is not None:
        if current.kind is not change.kind:
            return _refused(f"it is a {current.kind}, not a {change.kind}", current)
        if current.status is not StepStatus.FAILED and not _taken_up_again(current, run):
            return _refused(f"it is {current.status} already", current)
    attempts = 1 if current is None else current.attempts + 1
    base = StepRecord(
        id=step_id,
        kind=change.kind,
        status=StepStatus.FAILED,
        n=n if current is None else current.n,
        attempts=attempts,
        run=run,
        writer=writer,
        started_at=now,
    )
    if isinstance(change, Failed):
        return Applied(replace(base, error=change.error, finished_at=now))
    started = now - change.ms / 1000
    if change.error is not None:
        return Applied(
            replace(base, status=StepStatus.ERRORED, error=change.error, started_at=started, finished_at=now)
        )
    result = change.result_json or "null"
    return Applied(
        replace(
            base,
            status=StepStatus.SUCCEEDED,
            result_json=result,
            result_bytes=len(result.encode()),
            started_at=started,
            finished_at=now,
        )
    )


def _suspended(
    current: StepRecord | None, change: Suspended, *, step_id: str, n: int, run: int, writer: str, now: float
) -> Transition:
    if current is not None:
        if current.kind is not change.kind:
            return _refused(f"it is a {current.kind}, not a {change.kind}", current)
        if current.status is StepStatus.WAITING and current.run == run:
            return AlreadyDone(current)  # registered already: its until and what it awaits stand
        if not _taken_up_again(current, run):
            return _refused(f"it is {current.status} already", current)
    return Applied(
        StepRecord(
            id=step_id,
            kind=change.kind,
            status=StepStatus.WAITING,
            n=n if current is None else current.n,
            attempts=1 if current is None else current.attempts + 1,
            run=run,
            writer=writer,
            started_at=now,
            until=change.until,
            awaits=change.awaits,
            wait=change.wait,
        )
    )


def _resolved(current: StepRecord | None, change: Resolved, *, writer: str, now: float) -> Transition:
    if current is None:
        return _refused("it is not waiting", current)
    if current.status is not StepStatus.WAITING:
        if current.resolved_by == change.by and current.status in (StepStatus.SUCCEEDED, StepStatus.ERRORED):
            return AlreadyDone(current)  # the same resolution, told twice
        return _refused(f"it is {current.status} already", current)
    if current.awaits != change.awaits:
        return _refused(f"it waits for {current.awaits}, not {change.awaits}", current)
    status = StepStatus.ERRORED if change.error is not None else StepStatus.SUCCEEDED
    return Applied(
        _ended(current, status, writer, now, result_json=change.result_json, error=change.error, by=change.by)
    )


def _ended(
    current: StepRecord,
    status: StepStatus,
    writer: str,
    now: float,
    *,
    result_json: str | None = None,
    error: str | None = None,
    by: str,
) -> StepRecord:
    return replace(
        current,
        status=status,
        writer=writer,
        finished_at=now,
        result_json=result_json,
        result_bytes=len(result_json.encode()) if result_json is not None else 0,
        error=error,
        resolved_by=by,
        wait=None,
        spill=None,
    )


def _refused(reason: str, current: StepRecord | None) -> Refused:
    return Refused(reason, current)


# Limits ---------------------------------------------------------------------------------------------------

# Printable, no whitespace at either end: an id shows in views, logs and errors as it is.
_STEP_ID = re.compile(r"^[^\x00-\x1f\x7f]+$")


def step_id_problem(step_id: object) -> str | None:
    """Why `step_id` cannot name a step, if it cannot."""
    most = limits.MAX_STEP_ID_CHARS
    if not isinstance(step_id, str) or not 0 < len(step_id) <= most:
        return f"a step id must be a string of 1 to {most} characters, not {_shown(step_id)}"
    if not _STEP_ID.match(step_id) or step_id != step_id.strip():
        return f"step id {step_id!r} must be printable, without spaces at either end"
    try:
        step_id.encode()
    except UnicodeEncodeError:
        return f"step id {step_id!r} must be text"
    return None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def result_text(value: Any, *, what: str) -> tuple[str | None, str | None]:
    """`value` as recorded (compact JSON), or None and why it cannot be: not JSON, or over the limit.
    `what` names it in the reason ("the step's result", "the event's data")."""
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        return None, f"{what} cannot be recorded: not JSON ({type(error).__name__}: {error})"
    size = len(text.encode())
    limit = limits.MAX_STEP_RESULT_BYTES
    if size > limit:
        return None, f"{what} is {size} bytes serialised, over the limit of {limit} bytes"
    return text, None


def attribute_of(step_id: str) -> str:
    """The journal's attribute for `step_id`: a digest, so any id fits an attribute name of fixed length."""
    return "s" + hashlib.sha256(step_id.encode()).hexdigest()[:24]
