"""Small durable jobs (docs/decisions/durable-jobs.md), each one semantic at a time: steps recorded once across a
retry, a sleep, and a person's approval through a token's URL. The end-to-end suite runs them
(tests/e2e/test_durable.py); `order_flow` (orders.py) puts them together.
"""

from __future__ import annotations

from typing import Any

from corral_jobs import ChildJobFailed, JobContext, JobDead, JobFailed, job_type


@job_type("steps_then_retry", timeout_seconds=5, max_attempts=3)
def steps_then_retry(payload: Any, context: JobContext) -> dict[str, Any]:
    """Its second step fails on the first attempt: the retry resumes there, the first step not run again."""
    first = context.step("first", lambda: {"ran_on_attempt": context.attempt})
    second = context.step("second", _second, context.attempt)
    return {"first": first, "second": second}


def _second(attempt: int) -> dict[str, int]:
    if attempt == 1:
        raise JobFailed("the partner is down (on purpose, once)", retry_after=1)
    return {"ran_on_attempt": attempt}


@job_type("nap", timeout_seconds=5)
def nap(payload: Any, context: JobContext) -> dict[str, Any]:
    """Sleeps `seconds`, holding nothing: before and after are steps, each run once."""
    before = context.step("before", lambda: "before")
    context.sleep("nap", payload.get("seconds", 1) if isinstance(payload, dict) else 1)
    return {"before": before, "after": context.step("after", lambda: "after")}


@job_type("approval", timeout_seconds=5)
def approval(payload: Any, context: JobContext) -> dict[str, Any]:
    """Asks a person: a token whose URL completes it without a key (an approve link in an email)."""
    token = context.create_token("ask", timeout_seconds=payload.get("within_seconds", 300) if payload else 300)
    context.step("mail", lambda: {"sent_to_approver": token["url"]})
    decision = context.wait_for_token("decision", token)
    return {"decision": decision}


@job_type("square", timeout_seconds=5, max_attempts=1)
def square(payload: Any, context: JobContext) -> dict[str, Any]:
    """A child: squares `n`, or gives up when asked to (`"fail": true`), ending dead at once."""
    if payload.get("fail"):
        raise JobDead(f"asked to fail on {payload.get('n')}")
    return {"n": payload["n"], "square": payload["n"] ** 2}


@job_type("fan_out", timeout_seconds=5)
def fan_out(payload: Any, context: JobContext) -> dict[str, Any]:
    """A parent: one child with `run_job`, then `numbers` children at once with `run_jobs` (their results in
    order); a child that ends dead raises ChildJobFailed here, which this parent reports instead of failing."""
    numbers = payload.get("numbers", [1, 2, 3])
    first = context.run_job("first", "square", {"n": numbers[0]})
    try:
        squares = context.run_jobs(
            "all", [{"type": "square", "payload": {"n": n, "fail": n in payload.get("fail", [])}} for n in numbers]
        )
    except ChildJobFailed as failure:
        return {"first": first, "failed": [child["id"] for child in failure.children], "error": str(failure)}
    return {"first": first, "squares": [each["square"] for each in squares]}
