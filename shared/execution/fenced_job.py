"""One job's code, run: its type's `validate` hook, then its function, and what it did as data.

The same rules hold wherever a job runs: on the worker (built-in types, and any type whose code is
loaded in the worker's process) and in the **jobs function**, which runs a customer's types on the
far side of a fence (docs/decisions/customer-code-fence.md). This module is also that function's
contract with the worker:

    request  {"type", "payload", "job_id", "attempt", "max_attempts", "tenant", "seconds_left"[, "steps"]}
    answer   {"result": <JSON>}
             {"failure": "<the job's error>", "retry_after": <seconds> | null, "dead": <bool>}
             {"suspend": {"kind", "step", ...}}                         (a durable job only)
             each answer of a durable job may add "steps" (the step it ran), a failure "failed_step"

`steps` in the request is the job's journal as the worker read it (docs/decisions/durable-jobs.md): its
presence says the worker records durable steps, and JobContext's durable methods replay against it
(shared/durable/replay.py). A plain job's request and answer are what they were: no step, no field.

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
from dataclasses import dataclass, replace
from typing import Any

from shared.durable.failures import EndsTheJob
from shared.durable.replay import DurableRun, Suspended
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
    # A durable job's (shared/durable/replay.py): the step records this run made, where it stopped for the
    # worker to take it further (no result, no failure), and the step a failure came from.
    steps: tuple[dict[str, Any], ...] = ()
    suspend: dict[str, Any] | None = None
    failed_step: str | None = None

    def to_dict(self) -> dict[str, Any]:
        durable: dict[str, Any] = {"steps": list(self.steps)} if self.steps else {}
        if self.suspend is not None:
            return {"suspend": self.suspend} | durable
        if self.failure is None:
            return {"result": self.result} | durable
        if self.failed_step is not None:
            durable["failed_step"] = self.failed_step
        return {"failure": self.failure, "retry_after": self.retry_after, "dead": self.dead} | durable

    @classmethod
    def from_dict(cls, data: object) -> Answer:
        """The jobs function's answer; ValueError for any other shape (the worker then fails the attempt).
        A durable answer's steps and boundary are read further by the worker (shared/durable/protocol.py)."""
        if not isinstance(data, dict):
            raise ValueError("not an object")
        steps = data.get("steps", [])
        if not isinstance(steps, list) or not all(isinstance(entry, dict) for entry in steps):
            raise ValueError("steps must be a list of objects")
        base = set(data) - {"steps"}
        if base == {"suspend"}:
            if not isinstance(data["suspend"], dict):
                raise ValueError("suspend must be an object")
            return cls(suspend=data["suspend"], steps=tuple(steps))
        if base == {"result"}:
            return cls(result=data["result"], steps=tuple(steps))
        failed_step = data.get("failed_step")
        if base - {"failed_step"} != {"failure", "retry_after", "dead"}:
            raise ValueError(f"unexpected fields {sorted(data)}")
        failure, retry_after, dead = data["failure"], data["retry_after"], data["dead"]
        if not isinstance(failure, str) or not isinstance(dead, bool):
            raise ValueError("failure must be a string and dead a boolean")
        if retry_after is not None and (isinstance(retry_after, bool) or not isinstance(retry_after, int | float)):
            raise ValueError("retry_after must be a number or null")
        if failed_step is not None and not isinstance(failed_step, str):
            raise ValueError("failed_step must be a step id")
        return cls(failure=failure, retry_after=retry_after, dead=dead, steps=tuple(steps), failed_step=failed_step)


def failure_of(error: Exception) -> Answer:
    """A job's failure as data, whatever it raised: a timeout's message as it stands, any other
    prefixed with the exception's type; a JobFailed's Retry-After; JobDead (and a durable error that ends
    the job: a child's failure, a misuse of the steps) says not to retry."""
    return Answer(
        failure=str(error) if isinstance(error, job_types.JobTimedOut) else f"{type(error).__name__}: {error}",
        retry_after=error.retry_after if isinstance(error, job_types.JobFailed) else None,
        dead=isinstance(error, job_types.JobDead | EndsTheJob),
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
    # A durable job's recorded steps as the worker sends them (shared/store/durable/journal_items.py `replayed`);
    # None: the worker records no steps for this job (a plain job's request, as it always was).
    steps: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        fields = {
            "type": self.type,
            "payload": self.payload,
            "job_id": self.job_id,
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "tenant": self.tenant,
            "seconds_left": self.seconds_left,
        }
        return fields if self.steps is None else fields | {"steps": self.steps}

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
            request = cls(**{name: data[name] for name in cls.__dataclass_fields__ if name != "steps"})
        except (KeyError, TypeError) as error:
            raise ValueError(f"missing field {error}") from None
        texts = (request.type, request.job_id, request.tenant)
        numbers = (request.attempt, request.max_attempts, request.seconds_left)
        if not all(isinstance(text, str) for text in texts) or not all(
            isinstance(number, int | float) and not isinstance(number, bool) for number in numbers
        ):
            raise ValueError("type, job_id and tenant must be strings; attempt, max_attempts, seconds_left numbers")
        steps = data.get("steps")
        if steps is not None and (
            not isinstance(steps, list)
            or not all(isinstance(entry, dict) and {"id", "kind", "status"} <= set(entry) for entry in steps)
        ):
            raise ValueError("steps must be a list of recorded steps, each with its id, kind and status")
        return replace(request, steps=steps)


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
    durable = DurableRun.from_wire(request.steps) if request.steps is not None else None
    context = job_types.JobContext(
        job_id=request.job_id,
        attempt=request.attempt,
        max_attempts=request.max_attempts,
        deadline=time.time() + request.seconds_left,
        logger=logger,
        tenant=request.tenant,
        durable=durable,
    )
    try:
        result = time_limit.run_within(
            max(0.0, request.seconds_left), lambda: checked_run(job_type, request.payload, context)
        )
    except Suspended:
        return _suspended(durable)
    except Exception as error:  # a job's failure is data, whatever it raised
        return _failed(error, durable)
    if durable is not None:
        if durable.misuse is not None or durable.boundary is not None:
            return _failed(durable.misuse, durable) if durable.misuse is not None else _suspended(durable)
        durable.finish()
    if (problem := result_problem(result)) is not None:
        return Answer(failure=problem, dead=True)  # as the worker would judge it, before Lambda's 6 MB limit does
    ran = tuple(durable.new) if durable is not None else ()
    return Answer(result=json.loads(result_json(result)), steps=ran)  # the result as it will be stored


def _suspended(durable: DurableRun | None) -> Answer:
    """The run stopped where only the worker can take it further (a new step after one already run, a sleep,
    a wait, a token to mint, children to enqueue): the step it ran, and where it stopped."""
    assert durable is not None and durable.boundary is not None  # only a durable run raises Suspended
    if durable.misuse is not None:  # the code swallowed a misuse and went on to a boundary: it ends here
        return _failed(durable.misuse, durable)
    return Answer(suspend=durable.boundary, steps=tuple(durable.new))


def _failed(error: Exception, durable: DurableRun | None) -> Answer:
    """The code failed: its failure, the step it came from (a durable job's), and the steps this run made."""
    if durable is None:
        return failure_of(error)
    if durable.misuse is not None:
        error = durable.misuse  # a misuse ends the job, whatever the code raised after catching it
    failed = durable.failed_step(error)
    answer = failure_of(error)
    return replace(answer, steps=tuple(durable.new), failed_step=failed[0] if failed else None)
