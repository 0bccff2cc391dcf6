"""Durable jobs in the jobs function (docs/decisions/durable-jobs.md): JobContext's durable methods replay a
job's code against its recorded steps (shared/durable/replay.py), and the worker reads what each invoke did
(shared/durable/protocol.py) and records it in the journal (shared/store/durable/journal_items.py, on moto).

The worker's side is played by tests/unit/durable_harness.py as the worker will play it: each invoke runs one
new step at most, so a jobs function killed during a step loses that step only.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.durable import limits, protocol, steps
from shared.durable.replay import DurableRun, Recorded
from shared.durable.steps import StepKind, StepStatus
from shared.execution import fenced_job
from shared.execution.fenced_job import Answer
from shared.jobs import job_types
from shared.jobs.registry import JobContext, JobDead, JobFailed, JobType
from shared.store.durable import token_items
from tests.unit.durable_harness import API_URL, DurableJob

CALLS: dict[str, int] = {}


@pytest.fixture(autouse=True)
def fresh_calls() -> None:
    CALLS.clear()


def called(name: str, value: Any = None) -> Any:
    CALLS[name] = CALLS.get(name, 0) + 1
    return value if value is not None else {"step": name}


def register(monkeypatch: pytest.MonkeyPatch, name: str, code: Any) -> str:
    monkeypatch.setitem(job_types._REGISTRY, name, JobType(name=name, run=code))
    return name


def three_steps(payload: Any, context: JobContext) -> Any:
    first = context.step("a", called, "a")
    second = context.step("b", called, "b", {"after": first})
    third = context.step("c", called, "c")
    return {"results": [first, second, third]}


# One step per invoke, each recorded once ---------------------------------------------------------------


def test_each_invoke_runs_one_new_step_and_a_recorded_step_returns_without_running(aws, monkeypatch):
    job = DurableJob(register(monkeypatch, "unit_three", three_steps))

    answer = job.attempt_once()

    assert answer.result == {"results": [{"step": "a"}, {"after": {"step": "a"}}, {"step": "c"}]}
    assert CALLS == {"a": 1, "b": 1, "c": 1}
    assert [invoke.answer.suspend for invoke in job.invokes] == [
        {"kind": "continue", "step": "b"},
        {"kind": "continue", "step": "c"},
        None,
    ]
    # The second invoke carried a's result, and b ran with it.
    assert job.invokes[1].request["steps"] == [
        {"id": "a", "kind": "step", "status": "succeeded", "result": {"step": "a"}}
    ]
    assert [view["id"] for view in job.journal.views()] == ["a", "b", "c"]
    assert set(job.statuses().values()) == {"succeeded"}


def test_a_jobs_function_killed_during_a_step_runs_only_that_step_again(aws, monkeypatch):
    job = DurableJob(register(monkeypatch, "unit_three_killed", three_steps))

    job.attempt_once(killed_during=2)  # a recorded; the process dies while b runs
    assert CALLS == {"a": 1, "b": 1} and job.statuses() == {"a": "succeeded"}
    job.attempt += 1
    answer = job.fresh().attempt_once()

    assert answer.result is not None
    assert CALLS == {"a": 1, "b": 2, "c": 1}  # b ran again, a never did


def test_a_step_that_raises_fails_the_attempt_and_the_next_attempt_resumes_at_it(aws, monkeypatch):
    def flaky(payload: Any, context: JobContext) -> Any:
        context.step("a", called, "a")

        def charge() -> Any:
            called("charge-tries")
            if CALLS["charge-tries"] == 1:
                raise JobFailed("card processor timed out", retry_after=30)
            return {"charged": True}

        return context.step("charge", charge)

    job = DurableJob(register(monkeypatch, "unit_flaky", flaky))

    failed = job.attempt_once()
    assert (failed.failure, failed.retry_after, failed.dead, failed.failed_step) == (
        "JobFailed: card processor timed out",
        30,
        False,
        "charge",
    )
    assert job.statuses() == {"a": "succeeded", "charge": "failed"}
    job.attempt += 1
    answer = job.fresh().attempt_once()

    assert answer.result == {"charged": True}
    assert CALLS == {"a": 1, "charge-tries": 2}
    charge = job.journal.steps["charge"]
    assert (charge.status, charge.attempts, charge.n) == (StepStatus.SUCCEEDED, 2, 1)


def test_the_same_step_id_twice_in_one_run_ends_the_job_dead_naming_it(aws, monkeypatch):
    def twice(payload: Any, context: JobContext) -> Any:
        context.step("send", called, "first")
        with contextlib.suppress(Exception):  # a misuse ends the job even if the code catches it
            context.step("send", called, "second")
        return "never"

    job = DurableJob(register(monkeypatch, "unit_twice", twice))
    job.attempt_once()
    answer = job.attempt_once()

    assert answer.dead and "step id 'send' is used twice in one run" in (answer.failure or "")
    assert CALLS == {"first": 1}


def test_a_result_too_large_to_record_fails_the_step_naming_it_and_the_limit(aws, monkeypatch):
    def big(payload: Any, context: JobContext) -> Any:
        return context.step("render", lambda: "x" * (limits.MAX_STEP_RESULT_BYTES + 1))

    job = DurableJob(register(monkeypatch, "unit_big", big))
    answer = job.attempt_once()

    assert answer.dead
    assert "step 'render'" in (answer.failure or "") and str(limits.MAX_STEP_RESULT_BYTES) in (answer.failure or "")
    assert answer.failed_step == "render" and job.statuses() == {"render": "failed"}


def test_a_failure_the_code_catches_is_recorded_and_raised_again_where_it_happened(aws, monkeypatch):
    def careful(payload: Any, context: JobContext) -> Any:
        try:
            context.step("lookup", lambda: called("lookup") and {}["missing"])
        except (KeyError, steps_failed()) as error:
            outcome = f"caught {type(error).__name__}"
        context.step("after", called, "after")
        return outcome

    job = DurableJob(register(monkeypatch, "unit_careful", careful))
    answer = job.attempt_once()

    assert answer.result == "caught StepFailed"  # the last run replayed the recorded failure
    assert CALLS == {"lookup": 1, "after": 1}
    lookup = job.journal.steps["lookup"]
    assert (lookup.status, lookup.error) == (StepStatus.ERRORED, "KeyError: 'missing'")
    assert job.invokes[0].answer.steps[0]["status"] == "errored"


def steps_failed() -> type[Exception]:
    from corral_jobs import StepFailed

    return StepFailed


def test_each_result_is_the_json_the_journal_keeps_on_its_first_run_too(aws, monkeypatch):
    def shapes(payload: Any, context: JobContext) -> Any:
        return context.step("pair", lambda: (1, 2.5, "x"))

    job = DurableJob(register(monkeypatch, "unit_shapes", shapes))
    assert job.attempt_once().result == [1, 2.5, "x"]


# Sleeps and waits -----------------------------------------------------------------------------------------


def test_a_sleep_ends_the_attempt_and_once_it_is_over_the_code_goes_on_past_it(aws, monkeypatch):
    def cool_off(payload: Any, context: JobContext) -> Any:
        context.step("sent", called, "sent")
        context.sleep("cool-off", 3 * 86_400)
        return context.step("reminder", called, "reminder")

    job = DurableJob(register(monkeypatch, "unit_sleep", cool_off))
    suspended = job.attempt_once()

    assert suspended.suspend == {"kind": "sleep", "step": "cool-off", "seconds": 3 * 86_400}
    sleeping = job.journal.steps["cool-off"]
    assert (sleeping.status, sleeping.until) == (StepStatus.WAITING, job.now + 3 * 86_400)
    assert isinstance(
        job.later(3 * 86_400 - 1).resolve("cool-off", steps.TimedOut(StepKind.SLEEP)), steps.Refused
    )  # too early
    assert isinstance(job.later(1).resolve("cool-off", steps.TimedOut(StepKind.SLEEP)), steps.Applied)

    answer = job.fresh().attempt_once()
    assert answer.result == {"step": "reminder"}
    assert CALLS == {"sent": 1, "reminder": 1}


def test_sleep_until_takes_an_aware_datetime(aws, monkeypatch):
    def naive(payload: Any, context: JobContext) -> Any:
        context.sleep_until("later", datetime(2030, 1, 1))  # naive: the misuse under test

    def aware(payload: Any, context: JobContext) -> Any:
        context.sleep_until("later", datetime(2027, 1, 1, tzinfo=UTC) + timedelta(hours=1))

    refused = DurableJob(register(monkeypatch, "unit_naive", naive)).attempt_once()
    job = DurableJob(register(monkeypatch, "unit_aware", aware), now=datetime(2026, 12, 31, tzinfo=UTC).timestamp())
    job.attempt_once()

    assert refused.dead and "aware datetime" in (refused.failure or "")
    assert job.journal.steps["later"].until == datetime(2027, 1, 1, 1, tzinfo=UTC).timestamp()


def test_wait_for_event_answers_the_events_data_or_none_at_its_timeout(aws, monkeypatch):
    def paid(payload: Any, context: JobContext) -> Any:
        got = context.wait_for_event("payment", "payment.received", match={"order": 7}, timeout_seconds=3600)
        return {"payment": got}

    arrives = DurableJob(register(monkeypatch, "unit_paid", paid), job_id="jt-paid")
    expires = DurableJob("unit_paid", job_id="jt-unpaid")
    for job in (arrives, expires):
        assert job.attempt_once().suspend == {
            "kind": "wait_for_event",
            "step": "payment",
            "name": "payment.received",
            "match": {"order": 7},
            "timeout_seconds": 3600,
        }
    arrives.resolve("payment", steps.Resolved("event", "ev-1", json.dumps({"order": 7, "amount": 12})))
    expires.later(3600).resolve("payment", steps.TimedOut(StepKind.WAIT_FOR_EVENT))

    assert arrives.fresh().attempt_once().result == {"payment": {"order": 7, "amount": 12}}
    assert expires.fresh().attempt_once().result == {"payment": None}


def test_a_token_is_the_same_token_on_every_run_and_its_data_comes_back(aws, monkeypatch):
    def approval(payload: Any, context: JobContext) -> Any:
        token = context.create_token("approval", timeout_seconds=86_400)
        context.step("email", called, "email", {"link": token["url"]})
        return {"decision": context.wait_for_token("decision", token), "token": token}

    job = DurableJob(register(monkeypatch, "unit_approval", approval))
    suspended = job.attempt_once()

    assert suspended.suspend == {
        "kind": "wait_for_token",
        "step": "decision",
        "token": job.invokes[-1].answer.suspend["token"],
    }
    token_id = suspended.suspend["token"]
    assert job.journal.steps["approval"].result_json == json.dumps({"id": token_id})  # the URL is never stored
    assert token_items.get(token_id).job_id == job.job_id
    job.resolve("decision", steps.Resolved(f"token:{token_id}", "token", json.dumps({"approved": True})))
    answer = job.fresh().attempt_once()

    assert answer.result["decision"] == {"approved": True}
    assert answer.result["token"] == {"id": token_id, "url": job.token_url(token_id)}
    assert answer.result["token"]["url"].startswith(f"{API_URL}/v1/tokens/{token_id}/")
    assert CALLS == {"email": 1}


def test_a_child_that_ends_dead_raises_in_the_parent_naming_its_id_and_error(aws, monkeypatch):
    def parent(payload: Any, context: JobContext) -> Any:
        return context.run_job("render", "render_pdf", {"doc": 1}, max_attempts=2)

    job = DurableJob(register(monkeypatch, "unit_parent", parent))
    suspended = job.attempt_once()
    assert suspended.suspend == {
        "kind": "run_job",
        "step": "render",
        "job": {"type": "render_pdf", "payload": {"doc": 1}, "max_attempts": 2},
    }
    child = job.child_id("render")
    failed = [{"id": child, "status": "dead", "error": "JobDead: no such template"}]
    job.resolve("render", steps.Resolved(f"job:{child}", child, json.dumps(failed), error="child job ended dead"))
    answer = job.fresh().attempt_once()

    assert answer.dead
    assert answer.failure == f"ChildJobFailed: step 'render': child job {child} dead: JobDead: no such template"


def test_a_retry_of_the_dead_parent_takes_up_the_failed_child_step_again(aws, monkeypatch):
    def parent(payload: Any, context: JobContext) -> Any:
        context.step("prepare", called, "prepare")
        return context.run_job("render", "render_pdf")

    job = DurableJob(register(monkeypatch, "unit_parent_retried", parent))
    job.attempt_once()
    child = job.child_id("render")
    job.resolve(
        "render", steps.Resolved(f"job:{child}", child, json.dumps([{"id": child, "status": "dead"}]), error="x")
    )
    assert job.fresh().attempt_once().dead

    job.run, job.attempt = 1, 1  # POST /v1/jobs/{id}/retry: the next run
    again = job.fresh().attempt_once()

    assert again.suspend == {"kind": "run_job", "step": "render", "job": {"type": "render_pdf", "payload": None}}
    render = job.journal.steps["render"]
    assert (render.status, render.run, render.awaits) == (StepStatus.WAITING, 1, f"job:{job.child_id('render')}")
    assert CALLS == {"prepare": 1}  # it resumed after its last recorded step


# Misuse ends the job ----------------------------------------------------------------------------------------


def test_a_step_recorded_as_one_kind_and_called_as_another_ends_the_job_dead(aws, monkeypatch):
    code = {"sleep": False}

    def changing(payload: Any, context: JobContext) -> Any:
        if code["sleep"]:
            context.sleep("wait", 5)
        return context.step("wait", called, "wait")

    job = DurableJob(register(monkeypatch, "unit_changing", changing))
    job.attempt_once()
    code["sleep"] = True
    answer = job.attempt_once()

    assert answer.dead and "recorded as a step and is now called as a sleep" in (answer.failure or "")


def test_a_step_inside_a_step_ends_the_job_dead(aws, monkeypatch):
    def nested(payload: Any, context: JobContext) -> Any:
        return context.step("outer", lambda: context.step("inner", called, "inner"))

    answer = DurableJob(register(monkeypatch, "unit_nested", nested)).attempt_once()

    assert answer.dead and "step 'inner' is called inside step 'outer'" in (answer.failure or "")


def test_a_step_beyond_the_thousandth_ends_the_job_dead():
    recorded = {f"s{n}": Recorded(StepKind.STEP, StepStatus.SUCCEEDED, n) for n in range(limits.MAX_STEPS_PER_JOB)}
    run = DurableRun(recorded)

    assert run.step("s999", called, "x") == 999
    with pytest.raises(Exception, match="at most 1000 steps; step 'one-more' is one more"):
        run.step("one-more", called, "one-more")


def test_a_bare_except_cannot_swallow_where_the_run_stops(aws, monkeypatch):
    def swallowing(payload: Any, context: JobContext) -> Any:
        with contextlib.suppress(BaseException):  # what a careless job does
            context.sleep("nap", 60)
        return "went on"

    answer = DurableJob(register(monkeypatch, "unit_swallowing", swallowing)).attempt_once()

    assert answer.suspend == {"kind": "sleep", "step": "nap", "seconds": 60} and answer.result is None


def test_arguments_out_of_range_end_the_job_dead_naming_them(aws, monkeypatch):
    cases = {
        "unit_bad_sleep": lambda p, c: c.sleep("s", limits.MAX_WAIT_SECONDS + 1),
        "unit_bad_name": lambda p, c: c.wait_for_event("e", "", timeout_seconds=5),
        "unit_bad_match": lambda p, c: c.wait_for_event("e", "x", match={"k": "v" * 600}, timeout_seconds=5),
        "unit_bad_timeout": lambda p, c: c.create_token("t", timeout_seconds=0),
        "unit_bad_option": lambda p, c: c.run_job("j", "echo", delay_seconds=5),
        "unit_bad_id": lambda p, c: c.step(" padded", called, "x"),
    }
    reasons = {
        name: DurableJob(register(monkeypatch, name, code), job_id=f"jt-{name}").attempt_once()
        for name, code in cases.items()
    }

    assert all(answer.dead for answer in reasons.values())
    assert "seconds must be from 0" in reasons["unit_bad_sleep"].failure
    assert "an event name must be a string" in reasons["unit_bad_name"].failure
    assert "match is" in reasons["unit_bad_match"].failure
    assert "timeout_seconds must be from 1" in reasons["unit_bad_timeout"].failure
    assert "'delay_seconds' is not an option of a child job" in reasons["unit_bad_option"].failure
    assert "without spaces at either end" in reasons["unit_bad_id"].failure


# What a plain job pays -------------------------------------------------------------------------------------------


def test_a_plain_job_is_sent_and_answers_exactly_as_before(aws, monkeypatch):
    register(monkeypatch, "unit_plain", lambda payload, context: {"echo": payload})
    before = {"type": "unit_plain", "payload": 1, "job_id": "jt-1", "attempt": 1, "max_attempts": 3, "tenant": "acme"}
    request = fenced_job.Request(**before, seconds_left=5.0)

    assert request.to_dict() == before | {"seconds_left": 5.0}  # no steps field
    assert fenced_job.answer(request.to_dict()) == {"result": {"echo": 1}}
    assert fenced_job.answer(request.to_dict() | {"steps": []}) == {
        "result": {"echo": 1}
    }  # nothing recorded, nothing said


def test_a_durable_method_where_no_steps_are_recorded_ends_the_job_dead(aws, monkeypatch):
    register(monkeypatch, "unit_unrecorded", lambda payload, context: context.step("a", called, "a"))
    request = fenced_job.Request("unit_unrecorded", None, "jt-1", 1, 3, "acme", 5.0).to_dict()

    answer = Answer.from_dict(fenced_job.answer(request))

    assert answer.dead and "durable steps run only where the worker records them" in (answer.failure or "")
    assert CALLS == {}


def test_a_job_dead_in_a_step_is_dead_at_once(aws, monkeypatch):
    def refused(payload: Any, context: JobContext) -> Any:
        def call() -> Any:
            raise JobDead("card declined for good")

        return context.step("charge", call)

    answer = DurableJob(register(monkeypatch, "unit_declined", refused)).attempt_once()

    assert (answer.dead, answer.failed_step, answer.failure) == (True, "charge", "JobDead: card declined for good")


# The worker trusts nothing the jobs function says -------------------------------------------------------------


@pytest.mark.parametrize(
    ("new", "boundary", "reason"),
    [
        ([{"id": "a", "kind": "step", "status": "succeeded", "result": 1}] * 2, None, "one invoke runs one at most"),
        ([{"id": "a", "kind": "step", "status": "succeeded", "result": "x" * 70_000}], None, "over the limit"),
        ([{"id": "a", "kind": "sleep", "status": "succeeded", "result": 1}], None, "only a step's function"),
        ([{"id": "done", "kind": "step", "status": "succeeded", "result": 1}], None, "recorded already"),
        ([], {"kind": "teleport", "step": "x"}, "unknown reason"),
        ([], {"kind": "sleep", "step": "x", "seconds": -1}, "seconds must be from"),
        ([], {"kind": "wait_for_token", "step": "x", "token": "not-a-token"}, "is no token id"),
        ([], {"kind": "run_job", "step": "x", "job": {"type": "echo", "delay_seconds": 1}}, "not an option"),
        ([], {"kind": "continue", "step": "done"}, "recorded already"),
    ],
)
def test_an_answer_the_worker_cannot_trust_is_unreadable(new, boundary, reason):
    recorded = {"done": steps.StepRecord("done", StepKind.STEP, StepStatus.SUCCEEDED, 0, result_json="1")}

    with pytest.raises(protocol.Unreadable, match=reason):
        protocol.read(new, boundary, None, recorded)
