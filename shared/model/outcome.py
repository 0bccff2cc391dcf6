"""What became of an attempt and of a delivery: the worker's `Outcome` of one delivery, a job's result as
stored (`result_json`, `result_problem`), and the outcome message that carries an attempt's end to the
store through the queue (`OutcomeMessage`), with `read_message`, which tells a queue message's two kinds
apart; and when an attempt's code started (`Started`), which the worker gives the store with its outcome."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared import settings
from shared.model.message import JobMessage, UnreadableMessage, json_object
from shared.model.message_fields import text_check, timestamp_check
from shared.model.states import Status


class Outcome(StrEnum):
    """What the worker did with one delivery of a queue message."""

    SUCCEEDED = "succeeded"
    DEAD = "dead"
    DUPLICATE = "duplicate"  # the job is finished, or another message of it holds it
    LOST_CLAIM = "lost-claim"  # the attempt's lease was taken over before it recorded its outcome
    UNREADABLE = "unreadable"  # the message cannot run: in the DLQ with its reason
    RETRY_SENT = "retry-sent"  # failed while the store was down: an outcome message carries it and the retry
    # An outcome an earlier run carried in a message (a store blip's), now recorded: that run was counted
    # when it ended, so the record is not counted as a second success or death.
    RECORDED_LATE = "recorded-late"
    # A job waiting its turn near the queue's receive budget: sent again as a fresh message, carrying its
    # wait, and this one acknowledged (shared/worker/admit/waiting.py).
    RESENT = "resent"
    # A message found in the backstop with no outcome recorded: its job recorded `dead`, the message buried
    # in the DLQ (shared/worker/complete/backstop.py).
    DEAD_LETTERED = "dead-lettered"
    # A durable job's attempt stopped at a sleep or a wait: recorded `waiting`, its message acknowledged.
    SUSPENDED = "suspended"


def result_json(result: Any) -> str:
    """A job's result as stored (what GET shows): JSON, anything else as its str()."""
    return json.dumps(result, default=str)


def result_problem(result: object) -> str | None:
    """Why a result cannot be stored, if it cannot: the store holds at most MAX_RESULT_BYTES of it.

    Checked where the job ran: by the worker, and by the jobs function before it answers (a result
    over Lambda's 6 MB response limit would otherwise come back as the function's own error).
    """
    try:
        size = len(result_json(result).encode())
    except (ValueError, TypeError, RecursionError) as error:
        return f"the job's result cannot be serialised as JSON ({type(error).__name__}: {error})"
    if size > settings.MAX_RESULT_BYTES:
        return f"the job's result is {size} bytes serialised, over the limit of {settings.MAX_RESULT_BYTES} bytes"
    return None


@dataclass(frozen=True)
class Started:
    """When an attempt's code really started (its claim may have come earlier: a batch's jobs are claimed
    together, shared/worker/admit/claim_ahead.py), and whether it was the job's first attempt. Given by the
    worker to the store with the attempt's outcome (shared/store/jobs/job_store.py records it)."""

    at: float
    first_attempt: bool = False


OUTCOME_KIND = "outcome"
# What an attempt run without the store's claim may end as (shared/worker/admit/unclaimed.py): `failed` carries
# the job's retry.
_CARRIED = (Status.SUCCEEDED, Status.FAILED, Status.DEAD)
_OUTCOME_FIELDS = frozenset(
    {"kind", "v", "job", "status", "started_at", "finished_at", "result", "error", "attempt_token"}
)


@dataclass(frozen=True)
class OutcomeMessage:
    """An attempt's outcome, carried on the jobs queue to the store: the attempt ran while the store
    failed, without a claim, and the store records it when a later delivery of this message can.

    `failed`: the attempt failed with attempts left; this message is then also the job's retry
    (sent with the retry's delay), run under a claim once its failure is recorded.
    """

    job: JobMessage
    status: Status
    started_at: float
    finished_at: float
    result: Any = None
    error: str | None = None
    # Set when the attempt ran under a claim and only its outcome write failed: the claim's token,
    # so the outcome is recorded as that attempt's (shared/store/jobs/job_store.py `complete`).
    attempt_token: str | None = None
    v: int = 1

    def to_json(self) -> str:
        body: dict[str, Any] = {
            "kind": OUTCOME_KIND,
            "v": self.v,
            "job": self.job.to_dict(),
            "status": str(self.status),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }
        if self.status is Status.SUCCEEDED:
            body["result"] = self.result
        else:
            body["error"] = self.error or ""
        if self.attempt_token is not None:
            body["attempt_token"] = self.attempt_token
        return json.dumps(body, separators=(",", ":"), default=str)

    @classmethod
    def from_data(cls, data: dict[str, Any], *, secret: bytes) -> OutcomeMessage:
        """The outcome a message carries, checked field by field; UnreadableMessage says why not.

        Strict: any unknown or missing field, or a job whose id does not verify, makes it unreadable
        (its job is not touched: nothing it carries can be trusted to name one)."""
        problems = [f"unknown field {name!r}" for name in sorted(set(data) - _OUTCOME_FIELDS)]
        status = data.get("status")
        if data.get("kind") != OUTCOME_KIND or data.get("v") != 1:
            problems.append("fields 'kind' and 'v' must be 'outcome' and 1")
        if status not in _CARRIED:
            problems.append(f"field 'status' must be one of {', '.join(_CARRIED)}")
        for name in ("started_at", "finished_at"):
            if (problem := timestamp_check(data.get(name))) is not None:
                problems.append(f"field {name!r} {problem}")
        carried = "result" if status == Status.SUCCEEDED else "error"
        if status in _CARRIED and (carried not in data or ({"result", "error"} - {carried}) & set(data)):
            problems.append(f"a {status} outcome carries exactly one of 'result' and 'error': {carried!r}")
        if status in (Status.FAILED, Status.DEAD) and not isinstance(data.get("error"), str):
            problems.append("field 'error' must be a string")
        token = data.get("attempt_token")
        if token is not None and (status != Status.SUCCEEDED or text_check(64)(token) is not None):
            problems.append("field 'attempt_token' must be a claim's token, on a succeeded outcome only")
        job = data.get("job")
        if not isinstance(job, dict) or "id" not in job:
            problems.append("field 'job' must be a job message with its id")
        if problems:
            raise UnreadableMessage("unreadable outcome message: " + "; ".join(problems))
        try:
            message = JobMessage.from_data(job, sent_at=0, secret=secret)
        except UnreadableMessage as unreadable:
            raise UnreadableMessage(f"unreadable outcome message: its job: {unreadable.reason}") from None
        return cls(
            job=message,
            status=Status(status),
            started_at=data["started_at"],
            finished_at=data["finished_at"],
            result=data.get("result"),
            error=data.get("error"),
            attempt_token=token,
        )


def read_message(body: str, *, sent_at: float, secret: bytes) -> JobMessage | OutcomeMessage:
    """What a jobs-queue message carries: a job (most), or an outcome on its way to the store."""
    data = json_object(body)
    if data.get("kind") == OUTCOME_KIND:  # any other "kind" is a job message's unknown field
        return OutcomeMessage.from_data(data, secret=secret)
    return JobMessage.from_data(data, sent_at=sent_at, secret=secret)
