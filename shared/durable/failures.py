"""The errors a durable job's code may meet, raised by JobContext's durable methods (shared/durable/replay.py).

Customers import them from `corral_jobs`. Each `EndsTheJob`: uncaught, the job ends `dead` at once, with
its message, for no retry of the same run could change it (as `JobDead`). A `DurableMisuse` ends the job
dead even if its code catches it: the recorded steps no longer fit the code, and running on would record
nonsense.
"""

from __future__ import annotations

from typing import Any


class DurableError(Exception):
    """The root of the errors JobContext's durable methods raise into a job's code."""


class EndsTheJob(DurableError):
    """Uncaught, the job ends dead at once with this message."""


class StepFailed(EndsTheJob):
    """A step whose failure the job's code caught on an earlier run: it is recorded, and raised again
    where it happened, so every run of the code sees the same thing."""

    def __init__(self, step_id: str, error: str) -> None:
        super().__init__(f"step {step_id!r} failed: {error}")
        self.step_id = step_id
        self.error = error


class StepResultTooLarge(EndsTheJob):
    """A step returned what cannot be recorded: over the limit serialised, or not JSON."""

    def __init__(self, step_id: str, problem: str) -> None:
        super().__init__(f"step {step_id!r}: {problem}")
        self.step_id = step_id


class ChildJobFailed(EndsTheJob):
    """A child job (run_job, run_jobs) ended dead or cancelled. `children`: each failed child's
    {"id", "status", "error"}, in the order they were given."""

    def __init__(self, step_id: str, children: list[dict[str, Any]]) -> None:
        named = "; ".join(
            f"child job {child['id']} {child['status']}: {child.get('error') or ''}" for child in children
        )
        super().__init__(f"step {step_id!r}: {named}")
        self.step_id = step_id
        self.children = children


class DurableMisuse(EndsTheJob):
    """The code used a durable method in a way no run can record: a step id used twice in one run, a step
    id of another kind than recorded, a step inside a step, more steps than a job may record, an argument
    out of range. The job ends dead even if the code catches it."""
