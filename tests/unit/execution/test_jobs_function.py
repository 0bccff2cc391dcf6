"""The jobs function (docs/decisions/customer-code-fence.md): a customer's job runs there, and the worker
records what it answers as it records a job it ran itself.

Two halves, and the two together:
- the function's side, `fenced_job.answer`, as functions/jobs/handler.py calls it: the type's `validate`,
  then its code, within the time left, and every exception as the answer the worker reads;
- the worker's side, shared/worker/run/fence.py: a customer's type the worker knows by its declaration only
  (declared at synth, its code not loaded here) is sent to the jobs function through a stub Lambda
  client, and each answer, function error, failed invoke and timeout becomes a verdict;
- end to end in one process: the stub hands the request to `fenced_job.answer` with a registry of its
  own, standing in for the function's process, and each outcome is compared with the same code run
  in-process by the worker.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from infra import bundling
from shared import environment, settings
from shared.aws import lambda_clients
from shared.execution import fenced_job
from shared.execution.fenced_job import Answer, Request
from shared.jobs import job_types
from shared.jobs.registry import JobType
from shared.model.states import Status
from shared.store.jobs import job_store
from tests.unit.worker_harness import RetryLater, deliver_once, job_message

FENCED = "unit_fenced"  # a customer's type the worker knows by its declaration only
_ARN = "arn:aws:lambda:us-east-1:123456789012:function:corral-jobcode"


def _no_code(payload: Any, context: job_types.JobContext) -> Any:
    raise AssertionError("a fenced type's code never runs in the worker")


def _request(job_type: str = FENCED, payload: Any = None, **fields: Any) -> dict[str, Any]:
    base = {"job_id": "jt-1", "attempt": 1, "max_attempts": 3, "tenant": "acme", "seconds_left": 5.0}
    return {"type": job_type, "payload": payload, **base, **fields}


def _message(job_type: str = FENCED, payload: Any = None, max_attempts: int = 3, timeout: int | None = None):
    return job_message(job_type, payload, max_attempts=max_attempts, timeout_seconds=timeout)


class StubLambda:
    """Lambda's client as the worker uses it: records each invoke, answers as `respond` says."""

    def __init__(self, respond: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.calls: list[dict[str, Any]] = []
        self.respond = respond

    def invoke(self, **arguments: Any) -> dict[str, Any]:
        self.calls.append(arguments)
        return self.respond(json.loads(arguments["Payload"]))

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(call["Payload"]) for call in self.calls]


def _answering(body: object, function_error: str | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return lambda request: (
        {"StatusCode": 200, "Payload": io.BytesIO(raw)} | ({"FunctionError": function_error} if function_error else {})
    )


@pytest.fixture
def declared(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Declare customer types as the synth writes them into job_types.json, without registering their code."""
    table: dict[str, JobType] = {}
    monkeypatch.setattr(job_types, "_declared_at_synth", lambda: table)

    def declare(name: str = FENCED, **options: Any) -> None:
        table[name] = job_types._as_declared(JobType(name=name, run=_no_code, **options).declaration())

    declare()
    return declare


@pytest.fixture
def jobs_function(aws, declared, monkeypatch: pytest.MonkeyPatch) -> StubLambda:
    """A deployed jobs function (a stub client for it), answering `{"result": "ok"}` until told otherwise."""
    environment.change(jobs_function=settings.JOBS_FUNCTION)
    stub = StubLambda(_answering({"result": "ok"}))
    monkeypatch.setattr(lambda_clients, "reading", lambda seconds: stub)
    return stub


# Which types go to the jobs function -----------------------------------------------------------------


def test_a_declared_customer_type_whose_code_is_not_loaded_runs_in_the_jobs_function(declared):
    found = job_types.lookup(FENCED)

    assert found is not None and found.in_jobs_function and found.validate is None
    assert not job_types.lookup("echo").in_jobs_function  # built-ins run in the worker


def test_a_type_whose_code_is_loaded_here_runs_here_even_when_it_is_declared(declared, monkeypatch):
    declared("unit_loaded_here")
    monkeypatch.setitem(job_types._REGISTRY, "unit_loaded_here", JobType(name="unit_loaded_here", run=_no_code))

    assert not job_types.lookup("unit_loaded_here").in_jobs_function


def test_the_worker_holds_no_per_job_rule_of_a_customer_so_every_job_of_such_a_type_is_exclusive(declared):
    declared("unit_per_job", exclusive=lambda payload: False)
    declared("unit_never", exclusive=False)

    assert job_types.lookup("unit_per_job").is_exclusive({}) is True
    assert job_types.lookup("unit_never").is_exclusive({}) is False


# The worker's side: what it sends, and each answer as a verdict -------------------------------------


def test_the_worker_sends_the_one_job_and_records_the_result(jobs_function):
    assert deliver_once(_message(payload={"to": "a@example.com"}, max_attempts=4)) == "succeeded"

    (call,) = jobs_function.calls
    assert call["FunctionName"] == settings.JOBS_FUNCTION and call["InvocationType"] == "RequestResponse"
    (request,) = jobs_function.requests()
    seconds_left = request.pop("seconds_left")
    assert 0 < seconds_left <= job_types.lookup(FENCED).timeout_seconds
    assert request == {
        "type": FENCED,
        "payload": {"to": "a@example.com"},
        "job_id": f"jt-{FENCED}",
        "attempt": 1,
        "max_attempts": 4,
        "tenant": "acme",
        "steps": [],  # the worker records durable steps: a plain job's journal is empty, and never read
    }
    record = job_store.get(f"jt-{FENCED}")
    assert (record.status, record.result) == (Status.SUCCEEDED, "ok")


def test_a_failure_with_its_retry_after_is_retried_then(jobs_function):
    jobs_function.respond = _answering({"failure": "JobFailed: busy", "retry_after": 7, "dead": False})

    with pytest.raises(RetryLater) as later:
        deliver_once(_message())

    assert later.value.seconds == 7
    record = job_store.get(f"jt-{FENCED}")
    assert (record.status, record.error) == (Status.FAILED, "JobFailed: busy")


def test_a_dead_answer_ends_the_job_at_once(jobs_function):
    jobs_function.respond = _answering({"failure": "JobDead: 400 from upstream", "retry_after": None, "dead": True})

    assert deliver_once(_message()) == "dead"

    assert job_store.get(f"jt-{FENCED}").error == "JobDead: 400 from upstream"


def test_a_function_error_is_the_function_failing_and_counts_as_a_failed_attempt(jobs_function):
    error = {"errorType": "Runtime.ExitError", "errorMessage": "RequestId: 1 Error: Runtime exited with error"}
    jobs_function.respond = _answering(error, function_error="Unhandled")

    with pytest.raises(RetryLater):
        deliver_once(_message())

    record = job_store.get(f"jt-{FENCED}")
    assert record.status is Status.FAILED
    said = "JobFailed: the jobs function failed (Unhandled): Runtime.ExitError: RequestId: 1 Error: Runtime exited"
    assert record.error == f"{said} with error"


def test_on_the_last_attempt_a_function_error_makes_the_job_dead(jobs_function):
    jobs_function.respond = _answering(b"not json", function_error="Unhandled")

    assert deliver_once(_message(max_attempts=1)) == "dead"

    assert job_store.get(f"jt-{FENCED}").error == "JobFailed: the jobs function failed (Unhandled): not json"


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (
            ClientError(
                {"Error": {"Code": "TooManyRequestsException", "Message": f"Rate exceeded for {_ARN}"}}, "Invoke"
            ),
            "JobFailed: the jobs function could not be invoked (TooManyRequestsException)",
        ),
        (
            ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": f"Not found: {_ARN}"}}, "Invoke"),
            "JobFailed: the jobs function could not be invoked (ResourceNotFoundException)",
        ),
        (ReadTimeoutError(endpoint_url=f"https://lambda.amazonaws.com/functions/{_ARN}"), "JobFailed: no answer"),
    ],
)
def test_a_failed_invoke_is_a_failed_attempt_that_says_nothing_of_the_account(jobs_function, error, said):
    def fail(request: dict[str, Any]) -> dict[str, Any]:
        raise error

    jobs_function.respond = fail

    with pytest.raises(RetryLater):
        deliver_once(_message())

    recorded = job_store.get(f"jt-{FENCED}").error
    assert recorded.startswith(said) and "123456789012" not in recorded


@pytest.mark.parametrize(
    "body", [{"result": 1, "extra": 2}, {"failure": 3, "retry_after": None, "dead": False}, [1], b"{"]
)
def test_an_answer_the_worker_cannot_read_is_a_failed_attempt(jobs_function, body):
    jobs_function.respond = _answering(body)

    with pytest.raises(RetryLater):
        deliver_once(_message())

    assert job_store.get(f"jt-{FENCED}").error == "JobFailed: the jobs function's answer is not one the worker reads"


def test_a_job_still_running_in_the_jobs_function_at_its_timeout_is_timed_out_by_the_worker(jobs_function, declared):
    declared(FENCED, timeout_seconds=1)

    released, answered = threading.Event(), threading.Event()

    def slow(request: dict[str, Any]) -> dict[str, Any]:
        released.wait(30)
        answered.set()
        return _answering({"result": "too late"})(request)

    jobs_function.respond = slow

    with pytest.raises(RetryLater):
        deliver_once(_message())

    assert not answered.is_set()  # the worker stopped waiting at 1 s, not when the answer came
    released.set()
    record = job_store.get(f"jt-{FENCED}")
    assert (record.status, record.error) == (Status.FAILED, "timed out after 1 s")


def test_the_invoke_uses_a_kept_client_whose_read_timeout_covers_the_jobs_time_left(jobs_function, monkeypatch):
    asked: list[float] = []

    def reading(seconds: float) -> StubLambda:
        asked.append(seconds)
        return jobs_function

    monkeypatch.setattr(lambda_clients, "reading", reading)

    deliver_once(_message(timeout=20))

    (seconds,) = asked
    # The job's time left, and a second for the answer to come back; `reading` keeps one client per
    # power-of-two read timeout for the process's life (tests/unit/targets/test_lambda.py).
    assert 20 < seconds <= 21


def test_without_a_jobs_function_a_customer_type_fails_its_attempt(aws, declared):
    with pytest.raises(RetryLater):
        deliver_once(_message())

    assert "which this stack does not deploy" in job_store.get(f"jt-{FENCED}").error


# The function's side ----------------------------------------------------------------------------------


@pytest.fixture
def in_the_function(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Register a customer's type in the function's registry (not the worker's)."""
    function_registry: dict[str, JobType] = {}
    monkeypatch.setattr(job_types, "registered", function_registry.get)

    def register(name: str, run: Callable[[Any, job_types.JobContext], Any], **options: Any) -> None:
        function_registry[name] = JobType(name=name, run=run, **options)

    return register


def _raising(error: Exception) -> Callable[[Any, job_types.JobContext], Any]:
    def run(payload: Any, context: job_types.JobContext) -> Any:
        raise error

    return run


_REFUSED = "must be a known name"


def _refuse_names(payload: Any) -> None:
    raise job_types.InvalidPayload("payload.name", _REFUSED)


@pytest.mark.parametrize(
    ("run", "options", "answer"),
    [
        (lambda payload, context: {"got": payload}, {}, {"result": {"got": {"n": 1}}}),
        (
            _raising(job_types.JobFailed("busy", retry_after=7)),
            {},
            {"failure": "JobFailed: busy", "retry_after": 7, "dead": False},
        ),
        (_raising(job_types.JobDead("400")), {}, {"failure": "JobDead: 400", "retry_after": None, "dead": True}),
        (_raising(ValueError("boom")), {}, {"failure": "ValueError: boom", "retry_after": None, "dead": False}),
        (
            lambda payload, context: "never runs",
            {"validate": _refuse_names},
            {"failure": f"JobDead: invalid payload: payload.name: {_REFUSED}", "retry_after": None, "dead": True},
        ),
    ],
)
def test_the_function_answers_what_the_job_did(in_the_function, run, options, answer):
    in_the_function(FENCED, run, **options)

    assert fenced_job.answer(_request(payload={"n": 1})) == answer


def test_the_function_tells_the_job_its_attempt_and_stops_it_at_its_time_left(in_the_function):
    seen: list[job_types.JobContext] = []

    def spin(payload: Any, context: job_types.JobContext) -> None:
        seen.append(context)
        while True:
            pass

    in_the_function(FENCED, spin)

    answer = fenced_job.answer(_request(seconds_left=0.3, attempt=2, max_attempts=5, tenant="globex"))

    # A job that spins forever came back: the function stopped it at its time left.
    assert answer == {"failure": "timed out after 0.3 s", "retry_after": None, "dead": False}
    (context,) = seen
    assert (context.job_id, context.attempt, context.max_attempts, context.tenant) == ("jt-1", 2, 5, "globex")
    assert context.deadline == pytest.approx(time.time(), abs=1.5)


def test_a_result_the_store_cannot_hold_is_dead_before_lambda_would_refuse_it(in_the_function):
    in_the_function(FENCED, lambda payload, context: "x" * (settings.MAX_RESULT_BYTES + 1))

    answer = fenced_job.answer(_request())

    assert answer["dead"] is True and "over the limit" in answer["failure"]


def test_a_result_goes_back_as_it_will_be_stored(in_the_function):
    when = datetime(2026, 12, 4, tzinfo=UTC)
    in_the_function(FENCED, lambda payload, context: {"when": when, "pair": (1, 2)})

    assert fenced_job.answer(_request()) == {"result": {"when": str(when), "pair": [1, 2]}}


def test_the_function_runs_no_builtin_no_unknown_type_and_no_unreadable_request(in_the_function):
    in_the_function("echo", lambda payload, context: payload, builtin=True)

    for request in (_request("echo"), _request("unit_nobody_declared")):
        answer = fenced_job.answer(request)
        assert answer["failure"].startswith("JobFailed: unknown job type") and not answer["dead"]
    assert fenced_job.answer({"type": FENCED})["failure"].startswith("JobFailed: the jobs function cannot read")
    assert fenced_job.answer(_request(attempt="1"))["failure"].startswith("JobFailed: the jobs function cannot read")


def test_the_answers_shapes_are_the_ones_the_worker_reads():
    for answer in (Answer(result=[1]), Answer(failure="JobFailed: x", retry_after=2.5), Answer(failure="y", dead=True)):
        assert Answer.from_dict(json.loads(json.dumps(answer.to_dict()))) == answer
    request = Request("t", {"a": 1}, "jt-1", 1, 3, "acme", 4.5)
    assert Request.from_dict(request.to_dict()) == request


# Both sides: the same code makes the same verdict in the worker and across the fence ---------------


def _job_code(payload: Any, context: job_types.JobContext) -> Any:
    """A customer's job whose payload says what it does."""
    match payload["do"]:
        case "succeed":
            return {"attempt": context.attempt}
        case "busy":
            raise job_types.JobFailed("busy", retry_after=3)
        case "give_up":
            raise job_types.JobDead("the upstream said 400")
        case _:
            raise KeyError(payload["do"])


def _needs_do(payload: Any) -> None:
    if not isinstance(payload, dict) or "do" not in payload:
        raise job_types.InvalidPayload("payload.do", "is required")


@pytest.mark.parametrize("payload", [{"do": "succeed"}, {"do": "busy"}, {"do": "give_up"}, {"do": "crash"}, {}])
def test_the_same_code_makes_the_same_verdict_in_the_worker_and_in_the_jobs_function(
    jobs_function, in_the_function, monkeypatch, payload
):
    options = {"validate": _needs_do, "max_attempts": 2}
    in_the_function(FENCED, _job_code, **options)  # the jobs function's process, standing in
    jobs_function.respond = lambda request: _answering(fenced_job.answer(request))(request)
    here = "unit_same_code_here"
    monkeypatch.setitem(job_types._REGISTRY, here, JobType(name=here, run=_job_code, **options))

    outcomes = []
    for name in (FENCED, here):
        try:
            settled: object = deliver_once(_message(name, payload, max_attempts=2))
        except RetryLater as later:  # after the job's Retry-After, else the type's backoff (jittered)
            settled = ("retry", later.seconds if payload.get("do") == "busy" else "backoff")
        record = job_store.get(f"jt-{name}")
        outcomes.append((settled, record.status, record.error, record.result))

    fenced, in_process = outcomes
    assert fenced == in_process
    assert len(jobs_function.calls) == 1  # a refused payload too: the type's validate runs with its code


# The handler, as Lambda loads it --------------------------------------------------------------------

_HANDLER = """
import json, sys
from functions.jobs import handler
request = {"type": "render_email", "payload": {"markdown": "# Hi"}, "job_id": "jt-1", "attempt": 1,
           "max_attempts": 2, "tenant": "acme", "seconds_left": 10}
answer = handler.handler(request, None)
print(json.dumps({"answer": answer, "loaded": sorted(name for name in sys.modules if name.split(".")[0] in
      ("jobs", "boto3", "aws_lambda_powertools", "pynamodb") or name.startswith("shared.targets"))}))
"""


def test_the_handler_loads_the_customers_package_and_runs_its_job_with_little_else():
    package = bundling.ROOT / "examples" / "jobs"
    code = bundling.jobs_code_dir([package])
    layers = [bundling.dependencies_layer_dir(), bundling.jobs_layer_dir(package / "requirements.txt")]
    out = subprocess.run(
        [sys.executable, "-S", "-c", _HANDLER],
        cwd=code,
        env={
            "PYTHONPATH": ":".join(str(path) for path in [code, *(layer / "python" for layer in layers)]),
            "PATH": "/usr/bin:/bin",
            "PYTHONDONTWRITEBYTECODE": "1",
            environment.variable("jobs_package"): "jobs",  # what the stack tells the jobs function, and all
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout)
    assert "<h1>Hi</h1>" in found["answer"]["result"]["html"]
    # The customer's package, and none of the platform's AWS clients, targets or store.
    assert {name.split(".")[0] for name in found["loaded"]} == {"jobs"}
    assert '"message": "ran"' in out.stderr and '"outcome": "succeeded"' in out.stderr  # its one line per job
