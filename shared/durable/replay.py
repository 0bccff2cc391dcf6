"""One run of a durable job's code against its recorded steps: what JobContext's durable methods do.

The job's code runs from the top on every invoke of the jobs function. Each durable method looks its
step id up among the steps the worker sent (`recorded`): a recorded step answers its result at once; the
first step not recorded runs; and the run stops (raises `Suspended`, which the code cannot catch with
`except Exception`) at the first point only the worker can take further:

- **a second new step.** At most one step runs per invoke: its result exists only in this process
  until the worker records it, so if the process dies during the next one, only that next one runs
  again (`{"kind": "continue"}`: the worker records, then invokes again);
- **a sleep or a wait** that is not over (the worker registers it, and the attempt ends);
- **create_token** (the worker mints it: the capability needs the id secret, which stays in the worker);
- **run_job, run_jobs** (the worker enqueues the children: the jobs function cannot send to the queue).

What the run did travels back in the jobs function's answer (shared/execution/fenced_job.py): the new step's
record (`new`), and where it stopped (`boundary`). Nothing here touches AWS: the fence holds.

Replay is only as good as the code is deterministic: outside its steps the code must take the same path
on every run (no clock, no randomness, no I/O that decides which steps run). A step's result is handed
to the code as JSON, on its first run too, so every run sees the same value.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn, TypeVar

from shared import settings
from shared.durable import limits, matching, steps
from shared.durable.failures import ChildJobFailed, DurableMisuse, StepFailed, StepResultTooLarge
from shared.durable.steps import StepKind, StepStatus


class Suspended(BaseException):
    """The run stops here; the worker takes it further (`boundary` says how). A BaseException, so the job's
    own `except Exception` cannot swallow it; a bare `except` that does is undone (see `DurableRun`)."""

    def __init__(self, boundary: dict[str, Any]) -> None:
        super().__init__(boundary.get("kind", ""))
        self.boundary = boundary


@dataclass(frozen=True)
class Recorded:
    """A step as the worker sends it to the jobs function: enough to replay it."""

    kind: StepKind
    status: StepStatus
    result: Any = None
    error: str | None = None

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Recorded:
        return cls(StepKind(data["kind"]), StepStatus(data["status"]), data.get("result"), data.get("error"))


# The options run_job and run_jobs take for a child job, as POST /v1/jobs does.
CHILD_OPTIONS = ("max_attempts", "timeout_seconds", "concurrency", "priority")

T = TypeVar("T")


class DurableRun:
    """The durable side of one run of a job's code (one invoke of the jobs function).

    `recorded`: the job's steps as the worker read them from its journal, by step id (those this run
    replays: succeeded, timed out, errored in this run, waiting, failed). `now`: the clock (tests).
    """

    def __init__(self, recorded: Mapping[str, Recorded], *, now: Callable[[], float] = time.time) -> None:
        self._recorded = dict(recorded)
        self._now = now
        self._called: set[str] = set()  # step ids this run has called
        self._ran_new = False  # whether a step not recorded has run in this invoke
        self._inside: str | None = None  # the step whose function is running now
        self._caught: tuple[str, StepKind, BaseException, float] | None = None  # a step that raised, not yet seen again
        self.new: list[dict[str, Any]] = []  # the records this run made, for the worker to record
        self.boundary: dict[str, Any] | None = None  # where the run stopped, once it has
        self.misuse: DurableMisuse | None = None  # a misuse: the job ends dead whatever the code does next

    @classmethod
    def from_wire(cls, recorded: Sequence[Mapping[str, Any]], **options: Any) -> DurableRun:
        return cls({entry["id"]: Recorded.from_wire(entry) for entry in recorded}, **options)

    # The methods JobContext exposes -------------------------------------------------------------------

    def step(self, step_id: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> Any:
        found = self._enter(step_id, StepKind.STEP)
        if found is not None and found.status is StepStatus.SUCCEEDED:
            return _copy(found.result)
        if found is not None and found.status is StepStatus.ERRORED:
            raise StepFailed(step_id, found.error or "")
        self._run_new(step_id)
        started = time.monotonic()
        self._inside = step_id
        try:
            value = function(*args, **kwargs)
        except Exception as error:
            self._caught = (step_id, StepKind.STEP, error, _ms_since(started))
            raise
        finally:
            self._inside = None
        text, problem = steps.result_text(value, what="the step's result")
        if text is None:
            refused = StepResultTooLarge(step_id, problem or "")
            self._caught = (step_id, StepKind.STEP, refused, _ms_since(started))
            raise refused
        self.new.append(
            {"id": step_id, "kind": str(StepKind.STEP), "status": "succeeded", "result": json.loads(text)}
            | {"ms": _ms_since(started)}
        )
        return json.loads(text)

    def sleep(self, step_id: str, seconds: float) -> None:
        found = self._enter(step_id, StepKind.SLEEP)
        if found is not None and found.status is StepStatus.SUCCEEDED:
            return None
        if found is None or found.status is not StepStatus.WAITING:
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
                self._misuse(f"sleep {step_id!r}: seconds must be a number, not {seconds!r}")
            if not 0 <= seconds <= limits.MAX_WAIT_SECONDS:
                self._misuse(f"sleep {step_id!r}: seconds must be from 0 to {limits.MAX_WAIT_SECONDS}")
        self._suspend({"kind": str(StepKind.SLEEP), "step": step_id, "seconds": seconds})

    def sleep_until(self, step_id: str, when: datetime) -> None:
        found = self._enter(step_id, StepKind.SLEEP)
        if found is not None and found.status is StepStatus.SUCCEEDED:
            return None
        if found is None or found.status is not StepStatus.WAITING:
            if not isinstance(when, datetime) or when.tzinfo is None or when.utcoffset() is None:
                self._misuse(f"sleep_until {step_id!r}: when must be an aware datetime (with its time zone)")
            if when.timestamp() - self._now() > limits.MAX_WAIT_SECONDS:
                self._misuse(f"sleep_until {step_id!r}: when must be at most {settings.MAX_RUN_AT_DAYS} days ahead")
        until = when.timestamp() if isinstance(when, datetime) else None
        self._suspend({"kind": str(StepKind.SLEEP), "step": step_id, "until": until})

    def wait_for_event(
        self, step_id: str, name: str, *, match: Mapping[str, Any] | None = None, timeout_seconds: float
    ) -> Any:
        found = self._enter(step_id, StepKind.WAIT_FOR_EVENT)
        if found is not None and found.status is StepStatus.SUCCEEDED:
            return _copy(found.result)
        if found is not None and found.status is StepStatus.TIMED_OUT:
            return None
        boundary: dict[str, Any] = {"kind": str(StepKind.WAIT_FOR_EVENT), "step": step_id}
        if found is None or found.status is not StepStatus.WAITING:
            if (problem := matching.name_problem(name)) is not None:
                self._misuse(f"wait_for_event {step_id!r}: {problem}")
            match_value, problem = matching.checked_match(match)
            if problem is not None:
                self._misuse(f"wait_for_event {step_id!r}: {problem}")
            self._check_timeout("wait_for_event", step_id, timeout_seconds)
            boundary |= {"name": name, "match": match_value, "timeout_seconds": timeout_seconds}
        self._suspend(boundary)

    def create_token(self, step_id: str, *, timeout_seconds: float) -> dict[str, Any]:
        found = self._enter(step_id, StepKind.CREATE_TOKEN)
        if found is not None and found.status is StepStatus.SUCCEEDED:
            return dict(_copy(found.result))
        self._check_timeout("create_token", step_id, timeout_seconds)
        self._suspend({"kind": str(StepKind.CREATE_TOKEN), "step": step_id, "timeout_seconds": timeout_seconds})

    def wait_for_token(self, step_id: str, token: Mapping[str, Any] | str) -> Any:
        found = self._enter(step_id, StepKind.WAIT_FOR_TOKEN)
        if found is not None and found.status is StepStatus.SUCCEEDED:
            return _copy(found.result)
        if found is not None and found.status is StepStatus.TIMED_OUT:
            return None
        token_id = token.get("id") if isinstance(token, Mapping) else token
        if not isinstance(token_id, str) or not token_id.startswith(limits.TOKEN_ID_PREFIX) or len(token_id) > 64:
            self._misuse(f"wait_for_token {step_id!r}: token must be what create_token answered, or its id")
        self._suspend({"kind": str(StepKind.WAIT_FOR_TOKEN), "step": step_id, "token": token_id})

    def run_job(self, step_id: str, job_type: str, payload: Any = None, **options: Any) -> Any:
        found = self._enter(step_id, StepKind.RUN_JOB)
        if found is not None and found.status is StepStatus.SUCCEEDED:
            return _copy(found.result)
        if found is not None and found.status is StepStatus.ERRORED:
            raise ChildJobFailed(step_id, _failed_children(found))
        spec = self._child_spec(step_id, {"type": job_type, "payload": payload, **options}, "run_job")
        self._suspend({"kind": str(StepKind.RUN_JOB), "step": step_id, "job": spec})

    def run_jobs(self, step_id: str, specs: Sequence[Mapping[str, Any]]) -> list[Any]:
        found = self._enter(step_id, StepKind.RUN_JOBS)
        if found is not None and found.status is StepStatus.SUCCEEDED:
            return list(_copy(found.result))
        if found is not None and found.status is StepStatus.ERRORED:
            raise ChildJobFailed(step_id, _failed_children(found))
        if isinstance(specs, str | bytes | Mapping) or not isinstance(specs, Sequence):
            self._misuse(f"run_jobs {step_id!r}: give a list of jobs")
        if not 1 <= len(specs) <= settings.MAX_BATCH_SIZE:
            self._misuse(f"run_jobs {step_id!r}: give 1 to {settings.MAX_BATCH_SIZE} jobs")
        jobs = []
        for index, spec in enumerate(specs):
            if not isinstance(spec, Mapping):
                self._misuse(f"run_jobs {step_id!r}: jobs[{index}] must be an object with its type")
            jobs.append(self._child_spec(step_id, dict(spec), f"run_jobs jobs[{index}]"))
        self._suspend({"kind": str(StepKind.RUN_JOBS), "step": step_id, "jobs": jobs})

    # What the run did ---------------------------------------------------------------------------------

    def finish(self) -> None:
        """The code has returned, or raised: a step whose failure it caught and went on from is recorded."""
        self._record_caught()

    def failed_step(self, error: BaseException) -> tuple[str, StepKind] | None:
        """The step a failure of the code came from: the last step whose function raised, unless the code
        went on from it (then it is recorded errored, and the failure is the code's own)."""
        if self._caught is None:
            return None
        step_id, kind, _, _ = self._caught
        return step_id, kind

    # Inside -------------------------------------------------------------------------------------------

    def _enter(self, step_id: str, kind: StepKind) -> Recorded | None:
        """Every durable call starts here: the run may go on to this step, and this is what it recorded."""
        if self.misuse is not None:
            raise self.misuse
        if self.boundary is not None:
            raise Suspended(self.boundary)  # the code swallowed the signal: it stops here again
        if self._inside is not None:
            self._misuse(f"step {step_id!r} is called inside step {self._inside!r}: steps do not nest")
        if (problem := steps.step_id_problem(step_id)) is not None:
            self._misuse(problem)
        if step_id in self._called:
            self._misuse(f"step id {step_id!r} is used twice in one run: each step of a job needs its own id")
        self._record_caught()
        self._called.add(step_id)
        found = self._recorded.get(step_id)
        if found is not None and found.kind is not kind:
            self._misuse(
                f"step {step_id!r} was recorded as a {found.kind} and is now called as a {kind}:"
                " a job's code must call its steps the same way on every run"
            )
        if found is None and len(self._recorded) + len(self.new) >= limits.MAX_STEPS_PER_JOB:
            self._misuse(f"a job records at most {limits.MAX_STEPS_PER_JOB} steps; step {step_id!r} is one more")
        return found

    def _run_new(self, step_id: str) -> None:
        """A step not recorded runs now, unless one has already run in this invoke."""
        if self._ran_new:
            self._suspend({"kind": "continue", "step": step_id})
        self._ran_new = True

    def _record_caught(self) -> None:
        """A step raised, and the code went on: its failure is recorded (errored), raised again on replay."""
        if self._caught is None:
            return
        step_id, kind, error, ms = self._caught
        self._caught = None
        self.new.append({"id": step_id, "kind": str(kind), "status": "errored", "error": _error_text(error), "ms": ms})

    def _suspend(self, boundary: dict[str, Any]) -> NoReturn:
        self.boundary = boundary
        raise Suspended(boundary)

    def _misuse(self, message: str) -> NoReturn:
        self.misuse = DurableMisuse(message)
        raise self.misuse

    def _check_timeout(self, method: str, step_id: str, timeout: object) -> None:
        most = limits.MAX_WAIT_SECONDS
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout):
            self._misuse(f"{method} {step_id!r}: timeout_seconds must be a number, not {timeout!r}")
        if not 1 <= timeout <= most:  # type: ignore[operator]
            self._misuse(f"{method} {step_id!r}: timeout_seconds must be from 1 to {most}")

    def _child_spec(self, step_id: str, spec: dict[str, Any], where: str) -> dict[str, Any]:
        unknown = sorted(set(spec) - {"type", "payload", *CHILD_OPTIONS})
        if unknown:
            self._misuse(f"{where} {step_id!r}: {unknown[0]!r} is not an option of a child job")
        if not isinstance(spec.get("type"), str) or not spec["type"]:
            self._misuse(f"{where} {step_id!r}: a child job needs its type")
        text, problem = steps.result_text(spec.get("payload"), what="the child job's payload")
        if text is None:
            self._misuse(f"{where} {step_id!r}: {problem}")
        return {name: value for name, value in spec.items() if value is not None or name == "payload"}


def _copy(value: Any) -> Any:
    """A recorded result as the code gets it: a copy, so the code's changes never reach the record."""
    return json.loads(json.dumps(value))


def _ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:2000]


def _failed_children(found: Recorded) -> list[dict[str, Any]]:
    if isinstance(found.result, list):
        return [child for child in found.result if isinstance(child, dict)]
    return [{"id": "?", "status": "failed", "error": found.error or ""}]
