"""Verdicts: what handling one delivery decided, as values. The completer (shared/worker/complete/completer.py)
applies each one: every store write, DLQ send and visibility change it calls for.

A claimed attempt's verdict carries the `Attempt`, so the completer can write as that attempt (its
token) and knows how long the job stays held if its outcome cannot be written (its lease).

One delivery's result, Answer -> Ran -> Verdict -> Settled -> Handled, one value per step (only the
completer, which turns a Verdict into Settled, writes anything):
- `Answer` (shared/execution/fenced_job.py): what a job's code did, on either side of the fence;
- `Ran` (shared/worker/run/executor.py): that answer, with when the code started;
- `Verdict` (here): what to do about the delivery;
- `Settled` (shared/worker/complete/completer.py `Completer.settle`): what the delivery answers, `Outcome | HandBack`;
- `Handled` (shared/worker/producer.py `handle_all`): its `Settled`, and how long handling it took.

Only a job that ran passes through `Answer` and `Ran`: the executor's `Completed`, `Retry` and `Dead`,
and an unclaimed run's `RanUnclaimed` (shared/worker/admit/unclaimed.py). The rest enter at `Verdict`:
receive's (`Unreadable`, `HandBack`, `Wait`, `Duplicate`, `LateOutcome`, and `Dead` when every attempt
died without an outcome) and the backstop's (`DeadLettered`, shared/worker/complete/backstop.py). A `Wait`
settles as a hand-back, or as `Outcome.RESENT` when its message is sent again. A delivery whose outcome
write or outcome message fails after it was answered is handed back at the batch's end: a
`LateHandBack` (complete/carried.py), beside its `Handled`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.model.message import JobMessage
from shared.model.outcome import OutcomeMessage, Started
from shared.model.states import Status


@dataclass(frozen=True)
class Attempt:
    """An attempt that ran under the store's claim."""

    message: JobMessage  # with the record's max_attempts
    token: str  # the claim's: only this attempt can record the job's outcome
    started: Started  # when its code started
    lease_end: float  # epoch seconds: the claim holds the job until then


@dataclass(frozen=True)
class Completed:
    """The attempt succeeded with `result`; its write overlaps the batch's next jobs."""

    attempt: Attempt
    result: Any
    finished_at: float


@dataclass(frozen=True)
class Suspend:
    """A durable job's attempt stopped at a sleep or a wait (shared/worker/run/recorded_run.py): its step is
    waiting in the journal, registered, its timer sent; the job is recorded `waiting` and its message
    acknowledged."""

    attempt: Attempt
    suspension: Any  # recorded_run.Suspension (the worker's own type: verdicts import no worker module)


@dataclass(frozen=True)
class Resuspended:
    """The message whose attempt suspended its job, delivered again: its step is read once more, and the job
    woken if it resolved while the attempt was suspending it; then acknowledged."""

    job: JobMessage


@dataclass(frozen=True)
class Retry:
    """The attempt failed with attempts left: recorded `failed`, the message back in `delay_seconds`."""

    attempt: Attempt
    delay_seconds: float
    reason: str


@dataclass(frozen=True)
class Dead:
    """The job ends `dead` with `reason`: its message to the DLQ first (a failure there leaves the job
    to retry), then its record. `attempt`: the attempt that ends it; None when every attempt died
    without an outcome (the claim found them used up)."""

    reason: str
    job: JobMessage
    attempt: Attempt | None = None


@dataclass(frozen=True)
class Unreadable:
    """The message cannot run: its job recorded `dead` where it has no record (`job`: the valid fields
    of a message whose id verified; None: nothing to trust), then the message to the DLQ."""

    reason: str
    job: dict[str, Any] | None = None


@dataclass(frozen=True)
class HandBack:
    """Nothing was recorded: the message comes back after `delay_seconds`."""

    delay_seconds: float
    reason: str
    visibility_set: bool = False  # set already, as the batch began (a job over its tenant's cap)


# The message attribute that carries a waiting job's `Waited` from message to message (SQS keeps it when
# it moves the message to the backstop: its dead letter's reason says how long the job had waited).
WAITING_ATTRIBUTE = "corral-waiting"


@dataclass(frozen=True)
class Waited:
    """A job's wait so far, carried from message to message (shared/worker/admit/waiting.py)."""

    since: float  # epoch seconds: when it first waited
    why: str  # what it waits for (waiting.WaitReason)
    receives: int  # receives it has spent waiting, over all its messages
    # A throttled job's turn (at, start_by: epoch seconds), kept while it waits for it
    # (shared/worker/admit/throttle_turns.py).
    turn: tuple[float, float] | None = None

    def to_attribute(self) -> str:
        """Its WAITING_ATTRIBUTE's value."""
        fields: dict[str, Any] = {"since": self.since, "why": self.why, "receives": self.receives}
        if self.turn is not None:
            fields["turn"] = list(self.turn)
        return json.dumps(fields, separators=(",", ":"))

    @classmethod
    def from_attribute(cls, raw: str | None) -> Waited | None:
        """The wait a message's attribute carries; None for none, or for one not of corral's making."""
        try:
            found = json.loads(raw) if raw else None
            turn = found.get("turn")
            at, start_by = (float(turn[0]), float(turn[1])) if turn is not None else (None, None)
            carried = (at, start_by) if at is not None and start_by is not None else None
            return cls(float(found["since"]), str(found["why"]), int(found["receives"]), carried)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return None


@dataclass(frozen=True)
class Wait:
    """The job waits its turn, unclaimed and using no attempt (shared/worker/admit/waiting.py): its message is
    handed back for `delay_seconds`, or, near the queue's receive budget (`resend`), sent again as a
    fresh message carrying `waited` and acknowledged, so that no wait spends the budget."""

    job: JobMessage
    delay_seconds: int
    reason: str
    waited: Waited  # its wait, this receive included
    resend: bool
    visibility_set: bool = False  # set already, as the batch began (a job over its tenant's cap)
    # What its record shows it waits for (`waiting_for`), written once: at its first wait for this reason.
    shown: dict[str, Any] | None = None

    def hand_back(self) -> HandBack:
        return HandBack(self.delay_seconds, self.reason, self.visibility_set)


@dataclass(frozen=True)
class DeadLettered:
    """A job's message reached the backstop with no outcome recorded (SQS moved it after the jobs queue's
    receive budget, Scheduler could not deliver it, or someone moved it by hand): the job ends `dead` with
    `reason` unless it has finished, its follow-ups are done, and the message is buried in the DLQ."""

    reason: str
    job: JobMessage


@dataclass(frozen=True)
class Ended:
    """A finished job whose end sets something off: its batch's count, its callbacks (shared/batches/follow_ups.py)."""

    job: JobMessage  # its batch member's run as the record says
    status: Status  # as the record says


@dataclass(frozen=True)
class Duplicate:
    """The job is finished, or another message of it holds it: acknowledged unrun.

    `ended`: a finished job whose end sets something off. Its follow-ups are repeated (they are
    idempotent) before the message is acknowledged, in case the delivery that recorded the job died
    before them: this message is the one that carries them to the end."""

    ended: Ended | None = None


@dataclass(frozen=True)
class RanUnclaimed:
    """Attempt 1 ran without a claim while the store failed: its outcome is recorded at once if the
    store is back, else carried on the queue by an outcome message first delivered after `delay_seconds`
    (a failed attempt's message is also its retry)."""

    outcome: OutcomeMessage
    delay_seconds: int


@dataclass(frozen=True)
class LateOutcome:
    """An outcome message: an attempt's outcome that the store could not take when it ended, to record now."""

    outcome: OutcomeMessage


Verdict = (
    Completed
    | Retry
    | Dead
    | Unreadable
    | HandBack
    | Wait
    | Duplicate
    | RanUnclaimed
    | LateOutcome
    | DeadLettered
    | Suspend
    | Resuspended
)
