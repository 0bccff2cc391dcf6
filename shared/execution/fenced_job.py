"""One job's code, run: its type's `validate` hook, then its function, and what it did as data.

The same rules hold wherever a job runs: on the worker (built-in types, and any type whose code is
loaded in the worker's process) and in the **jobs function**, which runs a customer's types on the
far side of a fence (docs/decisions/customer-code-fence.md). This module is also that function's
contract with the worker:

    request  {"type", "payload", "job_id", "attempt", "max_attempts", "tenant", "seconds_left"}
    answer   {"result": <JSON>}
             {"failure": "<the job's error>", "retry_after": <seconds> | null, "dead": <bool>}

The worker claims the job, sends the request (shared/worker/run/fence.py), and records the answer as it
records a job it ran itself. A job's failure travels as an answer, never as the function's own
error: a Lambda `FunctionError` means the function itself failed (its process crashed, it ran out of
memory or time), and the worker counts that as a failed attempt. The function sees the one job it is
given and nothing of corral's: no table, no queue, no secret.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.execution import job_logging, time_limit
from shared.jobs import job_types
from shared.model.outcome import result_json, result_problem


@dataclass(frozen=True)
class Answer:
    """What a job's code did: returned `result`, or failed with `failure` (the job's error, as recorded)."""

    result: Any = None
    failure: str | None = None
    retry_after: float | None = None  # the job's own Retry-After (JobFailed)
    dead: bool = False  # no retry: the job said so (JobDead), its payload was refused, or its result cannot be stored

    def to_dict(self) -> dict[str, Any]:
        if self.failure is None:
            return {"result": self.result}
        return {"failure": self.failure, "retry_after": self.retry_after, "dead": self.dead}

    @classmethod
    def from_dict(cls, data: object) -> Answer:
        """The jobs function's answer; ValueError for any other shape (the worker then fails the attempt)."""
        if not isinstance(data, dict):
            raise ValueError("not an object")
        if set(data) == {"result"}:
            return cls(result=data["result"])
        if set(data) != {"failure", "retry_after", "dead"}:
            raise ValueError(f"unexpected fields {sorted(data)}")
        failure, retry_after, dead = data["failure"], data["retry_after"], data["dead"]
        if not isinstance(failure, str) or not isinstance(dead, bool):
            raise ValueError("failure must be a string and dead a boolean")
        if retry_after is not None and (isinstance(retry_after, bool) or not isinstance(retry_after, int | float)):
            raise ValueError("retry_after must be a number or null")
        return cls(failure=failure, retry_after=retry_after, dead=dead)


def failure_of(error: Exception) -> Answer:
    """A job's failure as data, whatever it raised: a timeout's message as it stands, any other
    prefixed with the exception's type; a JobFailed's Retry-After; JobDead says not to retry."""
    return Answer(
        failure=str(error) if isinstance(error, job_types.JobTimedOut) else f"{type(error).__name__}: {error}",
        retry_after=error.retry_after if isinstance(error, job_types.JobFailed) else None,
        dead=isinstance(error, job_types.JobDead),
    )


def checked_run(job_type: job_types.JobType, payload: Any, context: job_types.JobContext) -> Any:
    """The job's code, after its type's validator: a customer's validator is its code too, bounded alike."""
    _refuse_an_invalid_payload(job_type, payload)
    return job_type.run(payload, context)


def _refuse_an_invalid_payload(job_type: job_types.JobType, payload: Any) -> None:
    """A customer type's `validate`: a payload it refuses ends the job dead, as no retry changes the payload.

    A built-in's validator ran in the API at enqueue, and its code checks again as it runs.
    """
    if job_type.builtin or job_type.validate is None:
        return
    try:
        job_type.validate(payload)
    except job_types.InvalidPayload as refused:
        raise job_types.JobDead(f"invalid payload: {refused}") from refused


# The request, and the jobs function's side of it ----------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One job, as the worker sends it to the jobs function: the type's name, the payload, and what the
    job's code may know of its attempt (JobContext)."""

    type: str
    payload: Any
    job_id: str
    attempt: int
    max_attempts: int
    tenant: str
    seconds_left: float  # of the attempt's timeout: a time, not a deadline, as two machines' clocks differ

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "payload": self.payload,
            "job_id": self.job_id,
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "tenant": self.tenant,
            "seconds_left": self.seconds_left,
        }

    @classmethod
    def of(cls, job_type: str, payload: Any, context: job_types.JobContext) -> Request:
        return cls(
            type=job_type,
            payload=payload,
            job_id=context.job_id,
            attempt=context.attempt,
            max_attempts=context.max_attempts,
            tenant=context.tenant,
            seconds_left=round(context.seconds_left(), 3),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Request:
        """ValueError if a field is missing or of the wrong kind (only the worker invokes the function)."""
        try:
            request = cls(**{name: data[name] for name in cls.__dataclass_fields__})
        except (KeyError, TypeError) as error:
            raise ValueError(f"missing field {error}") from None
        texts = (request.type, request.job_id, request.tenant)
        numbers = (request.attempt, request.max_attempts, request.seconds_left)
        if not all(isinstance(text, str) for text in texts) or not all(
            isinstance(number, int | float) and not isinstance(number, bool) for number in numbers
        ):
            raise ValueError("type, job_id and tenant must be strings; attempt, max_attempts, seconds_left numbers")
        return request


def answer(event: Mapping[str, Any]) -> dict[str, Any]:
    """Run the job a request names, within its time left, and answer what it did (the jobs function's handler).

    Only the types of the job packages this process loaded run here (FunctionEnv.jobs_package): a
    built-in type is the worker's, which holds the secrets it needs.
    """
    started = time.monotonic()
    try:
        request = Request.from_dict(event)
    except ValueError as error:
        request = None
        ran = failure_of(job_types.JobFailed(f"the jobs function cannot read its request: {error}"))
    if request is None:
        logger = job_logging.logger_for("unreadable", "", 0, "")
    else:
        logger = job_logging.logger_for(request.type, request.job_id, request.attempt, request.tenant)
        found = job_types.registered(request.type)
        if found is None or found.builtin:
            ran = failure_of(job_types.JobFailed(f"unknown job type {request.type!r} in the jobs function"))
        else:
            ran = _run(found, request, logger)
    # One line per job: the outcome in the function's own log. It also ends the invocation's output,
    # which the embedded emulator otherwise waits ~50 ms for (docs/decisions/local-stack.md).
    outcome = "succeeded" if ran.failure is None else "dead" if ran.dead else "failed"
    logger.info("ran", extra={"outcome": outcome, "ms": round((time.monotonic() - started) * 1000, 2)})
    return ran.to_dict()


def _run(job_type: job_types.JobType, request: Request, logger: Any) -> Answer:
    context = job_types.JobContext(
        job_id=request.job_id,
        attempt=request.attempt,
        max_attempts=request.max_attempts,
        deadline=time.time() + request.seconds_left,
        logger=logger,
        tenant=request.tenant,
    )
    try:
        result = time_limit.run_within(
            max(0.0, request.seconds_left), lambda: checked_run(job_type, request.payload, context)
        )
    except Exception as error:  # a job's failure is data, whatever it raised
        return failure_of(error)
    if (problem := result_problem(result)) is not None:
        return Answer(failure=problem, dead=True)  # as the worker would judge it, before Lambda's 6 MB limit does
    return Answer(result=json.loads(result_json(result)))  # the result as it will be stored, so Lambda can send it
