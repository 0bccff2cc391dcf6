"""Trivial work, as plain jobs and as the steps of durable ones: what `make durable` compares."""

from __future__ import annotations

from typing import Any

from corral_jobs import JobContext, job_type

STEPS = 10
EVENT = "bench.go"  # the event `bench-wait` waits for; bench/scenarios/durable.py sends it


def _n(payload: Any) -> int:
    return int(payload.get("n", 0)) if isinstance(payload, dict) else 0


@job_type("bench-trivial", timeout_seconds=10)
def trivial(payload: Any, context: JobContext) -> dict[str, int]:
    """One unit of the work: a small dict, as each step of `bench-ten-steps` returns."""
    return {"n": _n(payload)}


@job_type("bench-ten-steps", timeout_seconds=60)
def ten_steps(payload: Any, context: JobContext) -> dict[str, Any]:
    """Ten steps, each the work of one `bench-trivial`: each recorded in the journal, one invoke each."""
    results = [context.step(f"s{n}", lambda n=n: {"n": n}) for n in range(STEPS)]
    return {"steps": len(results)}


@job_type("bench-wait", timeout_seconds=10)
def wait(payload: Any, context: JobContext) -> dict[str, Any]:
    """A step, a wait for the event `bench.go` naming this run, and a step: the one after the wait says when
    the event resumed the job."""
    run = payload.get("run") if isinstance(payload, dict) else None
    context.step("before", lambda: {"run": run})
    data = context.wait_for_event("wait", EVENT, match={"run": run}, timeout_seconds=600)
    return {"after": context.step("after", lambda: {"resumed": data is not None})}
