"""The worker's reading of a durable job's answer from the jobs function: what its code did in one invoke.

The jobs function runs a customer's code, so the worker trusts nothing it says: every step record and
every boundary is checked here before anything is written (ids, kinds, sizes, ranges, one new step at
most), and an answer that fails a check is `Unreadable` (the attempt fails, as any answer the worker
cannot read). What passes becomes `Progress`: the step to record (`NewStep`), where the run stopped
(`boundary`: the next step to run, a sleep, a wait, a token to mint, children to enqueue), and the step
a failure came from. The worker records, then acts on the boundary (docs/decisions/durable-jobs.md
"One attempt").

Pure, like the rest of shared/durable: the worker calls it between the invoke and the journal's write.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared import settings
from shared.durable import limits, matching, steps, tokens
from shared.durable.replay import CHILD_OPTIONS
from shared.durable.steps import StepKind, StepRecord
from shared.errors import CorralError


class Unreadable(CorralError, ValueError):
    """The answer's durable part is not one the worker reads: the attempt fails with this reason."""


@dataclass(frozen=True)
class NewStep:
    """A step the run made: its result (JSON text, checked), or the failure the code caught (`error`)."""

    id: str
    kind: StepKind
    result_json: str | None
    error: str | None
    ms: float

    def change(self) -> steps.Ran:
        return steps.Ran(self.kind, result_json=self.result_json, error=self.error, ms=self.ms)


@dataclass(frozen=True)
class Continue:
    """The next step to run: one has run in this invoke already (invoke again once it is recorded)."""

    step: str


@dataclass(frozen=True)
class Sleep:
    step: str
    seconds: float | None = None  # from now, on the worker's clock
    until: float | None = None  # epoch seconds (sleep_until)

    def ends_at(self, now: float) -> float:
        return self.until if self.until is not None else now + (self.seconds or 0.0)


@dataclass(frozen=True)
class WaitForEvent:
    step: str
    name: str | None = None  # None: registered already (the step is waiting)
    match: dict[str, Any] | None = None
    timeout_seconds: float | None = None


@dataclass(frozen=True)
class CreateToken:
    step: str
    timeout_seconds: float


@dataclass(frozen=True)
class WaitForToken:
    step: str
    token: str


@dataclass(frozen=True)
class RunJob:
    step: str
    job: dict[str, Any]


@dataclass(frozen=True)
class RunJobs:
    step: str
    jobs: tuple[dict[str, Any], ...]


Boundary = Continue | Sleep | WaitForEvent | CreateToken | WaitForToken | RunJob | RunJobs


@dataclass(frozen=True)
class Progress:
    new: NewStep | None = None
    boundary: Boundary | None = None
    failed_step: str | None = None


def read(
    new_steps: tuple[dict[str, Any], ...] | list[dict[str, Any]],
    boundary: Mapping[str, Any] | None,
    failed_step: str | None,
    recorded: Mapping[str, StepRecord],
) -> Progress:
    """Check what the jobs function says its run did, against the job's journal (`recorded`, by step id)."""
    if len(new_steps) > 1:
        raise Unreadable(f"the run reports {len(new_steps)} new steps; one invoke runs one at most")
    new = _new_step(new_steps[0], recorded) if new_steps else None
    read_boundary = _boundary(boundary, recorded) if boundary is not None else None
    if failed_step is not None and (steps.step_id_problem(failed_step) or failed_step in _final(recorded)):
        raise Unreadable(f"failed_step {failed_step!r} names no step that can fail")
    if read_boundary is not None and new is not None and read_boundary.step == new.id:
        raise Unreadable(f"step {new.id!r} both ran and stopped the run")
    return Progress(new=new, boundary=read_boundary, failed_step=failed_step)


def _final(recorded: Mapping[str, StepRecord]) -> set[str]:
    return {step for step, record in recorded.items() if record.status in steps.FINAL_IN_EVERY_RUN}


def _new_step(entry: Mapping[str, Any], recorded: Mapping[str, StepRecord]) -> NewStep:
    step_id = entry.get("id")
    if (problem := steps.step_id_problem(step_id)) is not None:
        raise Unreadable(problem)
    assert isinstance(step_id, str)
    if entry.get("kind") != StepKind.STEP or entry.get("status") not in ("succeeded", "errored"):
        raise Unreadable(f"step {step_id!r}: only a step's function runs in the jobs function, and succeeds or errs")
    if step_id in _final(recorded):
        raise Unreadable(f"step {step_id!r} is recorded already")
    if step_id not in recorded and len(recorded) >= limits.MAX_STEPS_PER_JOB:
        raise Unreadable(f"step {step_id!r} is one more than the {limits.MAX_STEPS_PER_JOB} a job records")
    ms = entry.get("ms", 0.0)
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms) or ms < 0:
        raise Unreadable(f"step {step_id!r}: ms must be a duration")
    if entry["status"] == "errored":
        error = entry.get("error")
        if not isinstance(error, str):
            raise Unreadable(f"step {step_id!r}: an errored step carries its error")
        return NewStep(step_id, StepKind.STEP, None, error[:2000], float(ms))
    if "result" not in entry:
        raise Unreadable(f"step {step_id!r}: a succeeded step carries its result")
    text, problem = steps.result_text(entry["result"], what=f"step {step_id!r}'s result")
    if text is None:
        raise Unreadable(problem or "")
    return NewStep(step_id, StepKind.STEP, text, None, float(ms))


def _boundary(data: Mapping[str, Any], recorded: Mapping[str, StepRecord]) -> Boundary:
    kind, step_id = data.get("kind"), data.get("step")
    if (problem := steps.step_id_problem(step_id)) is not None:
        raise Unreadable(f"the run stopped at no step: {problem}")
    assert isinstance(step_id, str)
    if step_id in _final(recorded):
        raise Unreadable(f"the run stopped at step {step_id!r}, which is recorded already")
    found = recorded.get(step_id)
    if found is not None and kind != "continue" and found.kind != kind:
        raise Unreadable(f"step {step_id!r} is a {found.kind}, not a {kind}")
    waiting = found is not None and found.status is steps.StepStatus.WAITING
    match kind:
        case "continue":
            return Continue(step_id)
        case StepKind.SLEEP:
            if waiting:
                return Sleep(step_id)
            if "until" in data and data["until"] is not None:
                return Sleep(step_id, until=_number(data["until"], "until", 1, 10**11))
            return Sleep(step_id, seconds=_number(data.get("seconds"), "seconds", 0, limits.MAX_WAIT_SECONDS))
        case StepKind.WAIT_FOR_EVENT:
            if waiting:
                return WaitForEvent(step_id)
            name = data.get("name")
            if (problem := matching.name_problem(name)) is not None:
                raise Unreadable(problem)
            match, problem = matching.checked_match(data.get("match"))
            if match is None:
                raise Unreadable(problem or "")
            timeout = _number(data.get("timeout_seconds"), "timeout_seconds", 1, limits.MAX_WAIT_SECONDS)
            return WaitForEvent(step_id, str(name), match, timeout)
        case StepKind.CREATE_TOKEN:
            timeout = _number(data.get("timeout_seconds"), "timeout_seconds", 1, limits.MAX_WAIT_SECONDS)
            return CreateToken(step_id, timeout)
        case StepKind.WAIT_FOR_TOKEN:
            token = data.get("token")
            if not tokens.is_token_id(token):
                raise Unreadable(f"step {step_id!r}: {token!r} is no token id")
            return WaitForToken(step_id, str(token))
        case StepKind.RUN_JOB:
            return RunJob(step_id, _child(data.get("job"), step_id))
        case StepKind.RUN_JOBS:
            jobs = data.get("jobs")
            if not isinstance(jobs, list) or not 1 <= len(jobs) <= settings.MAX_BATCH_SIZE:
                raise Unreadable(f"step {step_id!r}: run_jobs takes 1 to {settings.MAX_BATCH_SIZE} jobs")
            return RunJobs(step_id, tuple(_child(job, step_id) for job in jobs))
    raise Unreadable(f"the run stopped at step {step_id!r} for an unknown reason {kind!r}")


def _number(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Unreadable(f"{name} must be a number")
    if not low <= value <= high:
        raise Unreadable(f"{name} must be from {low} to {high}")
    return float(value)


def _child(spec: Any, step_id: str) -> dict[str, Any]:
    """A child job's spec as the run gave it: its shape only; the worker checks it as a job before it is sent."""
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise Unreadable(f"step {step_id!r}: a child job is an object with its type")
    unknown = sorted(set(spec) - {"type", "payload", *CHILD_OPTIONS})
    if unknown:
        raise Unreadable(f"step {step_id!r}: {unknown[0]!r} is not an option of a child job")
    text, problem = steps.result_text(spec.get("payload"), what=f"step {step_id!r}'s child payload")
    if text is None:
        raise Unreadable(problem or "")
    return json.loads(json.dumps(spec))
