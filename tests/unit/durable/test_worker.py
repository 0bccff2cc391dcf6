"""The worker's side of durable jobs (shared/worker/run/recorded_run.py, the completer's suspension, the claim of
a waiting job) on moto, with the jobs function's side the real one (`fenced_job.answer`) behind a stub Lambda
client: steps recorded once across a retry, a sleep that suspends the job holding nothing and resumes, a wait
resumed by an event (sent after the wait, or before it: the look back), a token completed once, a waiting job
cancelled that never resumes, and a plain job that costs no journal.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from shared import environment, settings
from shared.aws import lambda_clients
from shared.control import cancel as control
from shared.durable import tokens as durable_tokens
from shared.errors import Conflict
from shared.execution import fenced_job
from shared.jobs import job_types
from shared.jobs.registry import JobContext, JobFailed, JobType
from shared.model.message import JobMessage
from shared.model.outcome import Outcome
from shared.model.states import Status
from shared.store.durable import event_items, journal_items, token_items
from shared.store.id_secret import id_secret
from shared.store.jobs import job_store
from shared.tenants import tenants
from shared.waits import events, tokens
from shared.worker.delivery import Delivery
from tests.unit.api_harness import answer
from tests.unit.worker_harness import RetryLater, work

DURABLE = "unit_durable"
calls: dict[str, int] = {}


def _count(name: str, value: Any = None) -> Any:
    calls[name] = calls.get(name, 0) + 1
    return value if value is not None else name


def _no_code(payload: Any, context: JobContext) -> Any:
    raise AssertionError("a fenced type's code never runs in the worker")


class FencedCode:
    """The jobs function in this process: the stub Lambda client hands each request to `fenced_job.answer` with
    `code` registered for it alone (the worker sees the type's declaration only)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.code: Callable[[Any, JobContext], Any] = _no_code
        self.requests: list[dict[str, Any]] = []
        self._monkeypatch = monkeypatch

    def invoke(self, **arguments: Any) -> dict[str, Any]:
        request = json.loads(arguments["Payload"])
        self.requests.append(request)
        with self._monkeypatch.context() as patch:
            patch.setitem(job_types._REGISTRY, DURABLE, JobType(name=DURABLE, run=self.code))
            answer = fenced_job.answer(request)
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(answer).encode())}


@pytest.fixture
def fenced(aws, monkeypatch: pytest.MonkeyPatch) -> FencedCode:
    calls.clear()
    table = {DURABLE: job_types._as_declared(JobType(name=DURABLE, run=_no_code, max_attempts=3).declaration())}
    monkeypatch.setattr(job_types, "_declared_at_synth", lambda: table)
    environment.change(jobs_function=settings.JOBS_FUNCTION, api_url="https://api.example.com")
    stub = FencedCode(monkeypatch)
    monkeypatch.setattr(lambda_clients, "reading", lambda seconds: stub)
    return stub


def _message(job_id: str = "jt-durable-1", payload: Any = None) -> JobMessage:
    return JobMessage(
        id=job_id, tenant="acme", type=DURABLE, payload=payload, max_attempts=3, enqueued_at=time.time() - 1
    )


def _deliver(message: JobMessage, message_id: str = "m1") -> str:
    return work(message, Delivery(message_id=message_id, body=message.to_json()))


def _record(job_id: str = "jt-durable-1"):
    return job_store.get(job_id, consistent=True)


def _steps(job_id: str = "jt-durable-1") -> dict[str, tuple[str, int]]:
    journal = journal_items.read(job_id)
    assert journal is not None
    return {record.id: (str(record.status), record.attempts) for record in journal.ordered()}


def _wake_messages(aws: dict[str, Any]) -> list[dict[str, Any]]:
    import boto3

    sqs = boto3.client("sqs")
    found = sqs.receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, WaitTimeSeconds=0)
    return [json.loads(each["Body"]) for each in found.get("Messages", [])]


# Steps ---------------------------------------------------------------------------------------------------


def test_steps_are_recorded_once_and_a_retry_resumes_at_the_step_that_failed(fenced):
    def code(payload: Any, context: JobContext) -> Any:
        first = context.step("a", _count, "a")
        if context.attempt == 1:
            context.step("b", _fail_once)
        second = context.step("b2", _count, "b2")
        return [first, second]

    fenced.code = code

    with pytest.raises(RetryLater):
        _deliver(_message())
    assert _deliver(_message(), "m2") == Outcome.SUCCEEDED

    assert calls == {"a": 1, "fail": 1, "b2": 1}
    record = _record()
    assert (record.status, record.result, record.journal) == (Status.SUCCEEDED, ["a", "b2"], True)
    assert _steps()["a"] == ("succeeded", 1)
    assert _steps()["b"] == ("failed", 1)
    # Each invoke runs one new step: a, then b (failed); then a replayed and b2 run.
    assert [len(request["steps"]) for request in fenced.requests] == [0, 1, 2]


def _fail_once() -> None:
    _count("fail")
    raise JobFailed("the partner is down")


def test_a_plain_job_keeps_no_journal_and_is_one_invoke(fenced):
    fenced.code = lambda payload, context: {"plain": True}

    assert _deliver(_message()) == Outcome.SUCCEEDED

    record = _record()
    assert (record.status, record.journal, record.result) == (Status.SUCCEEDED, False, {"plain": True})
    assert journal_items.read("jt-durable-1") is None
    (request,) = fenced.requests
    assert request["steps"] == []


# Sleeps --------------------------------------------------------------------------------------------------


def test_a_sleep_suspends_the_job_holding_no_attempt_and_its_wake_message_resumes_it(fenced, aws):
    def code(payload: Any, context: JobContext) -> Any:
        context.step("before", _count, "before")
        context.sleep("nap", 1)
        return context.step("after", _count, "after")

    fenced.code = code

    assert _deliver(_message()) == Outcome.SUSPENDED
    record = _record()
    assert (record.status, record.attempts) == (Status.WAITING, 0)
    assert record.public()["waiting_for"]["kind"] == "sleep"
    # The same message delivered again runs nothing; a wake message before its time is not run either.
    assert _deliver(_message()) == Outcome.SUSPENDED
    with pytest.raises(RetryLater):
        _deliver(_message(), "early-wake")
    assert calls == {"before": 1}

    time.sleep(1.2)
    (wake,) = _wake_messages(aws)
    assert wake["id"] == "jt-durable-1"
    assert _deliver(_message(), "wake") == Outcome.SUCCEEDED
    assert calls == {"before": 1, "after": 1}
    assert _record().result == "after"
    assert _steps()["nap"] == ("succeeded", 1)


# Events --------------------------------------------------------------------------------------------------


def _waits_for_payment(payload: Any, context: JobContext) -> Any:
    context.step("reserve", _count, "reserve")
    paid = context.wait_for_event("payment", "payment.received", match={"order": 7}, timeout_seconds=60)
    return {"paid": paid}


def _send_event(name: str, data: Any, event_id: str, tenant: str = "acme") -> dict[str, Any]:
    context = JobContext(job_id=f"je-{event_id}", attempt=1, max_attempts=3, deadline=time.time() + 5, logger=None)  # type: ignore[arg-type]
    context = JobContext(**{**context.__dict__, "tenant": tenant})
    return events.send({"name": name, "id": event_id, "data": data}, context)


def test_a_wait_for_an_event_is_resumed_by_its_tenants_matching_event_only(fenced, aws):
    fenced.code = _waits_for_payment

    assert _deliver(_message()) == Outcome.SUSPENDED
    waiting = _record().public()
    assert (waiting["status"], waiting["waiting_for"]["name"]) == ("waiting", "payment.received")

    assert _send_event("payment.received", {"order": 7}, "pay-other", tenant="globex")["resumed"] == []
    assert _send_event("payment.received", {"order": 8}, "pay-8")["resumed"] == []
    assert _send_event("payment.received", {"order": 7, "amount": 5}, "pay-7")["resumed"] == ["jt-durable-1"]

    assert _record().status is Status.QUEUED
    assert [each["id"] for each in _wake_messages(aws)] == ["jt-durable-1"]
    assert _deliver(_message(), "wake") == Outcome.SUCCEEDED
    assert _record().result == {"paid": {"order": 7, "amount": 5}}
    assert calls == {"reserve": 1}


def test_an_event_sent_before_its_wait_registers_is_found_by_the_wait(fenced):
    fenced.code = _waits_for_payment
    message = _message()
    assert _send_event("payment.received", {"order": 7}, "early")["resumed"] == []  # no wait yet

    assert _deliver(message) == Outcome.SUCCEEDED

    assert _record().result == {"paid": {"order": 7}}


def test_a_cancelled_waiting_job_never_resumes(fenced, aws):
    fenced.code = _waits_for_payment
    assert _deliver(_message()) == Outcome.SUSPENDED

    cancelled = control.cancel("acme", "jt-durable-1")

    assert cancelled.status is Status.CANCELLED
    assert _steps()["payment"] == ("cancelled", 1)
    assert _send_event("payment.received", {"order": 7}, "pay-late")["resumed"] == []
    assert _record().status is Status.CANCELLED
    assert _wake_messages(aws) == []


def test_a_cancelled_waiting_jobs_index_entry_is_taken_out(fenced, aws):
    fenced.code = _waits_for_payment
    assert _deliver(_message()) == Outcome.SUSPENDED
    _seq, before = event_items.send("acme", "payment.received", "probe-1", {"order": 7}, time.time())
    assert [waiter.job_id for waiter in before] == ["jt-durable-1"]

    control.cancel("acme", "jt-durable-1")

    _seq, after = event_items.send("acme", "payment.received", "probe-2", {"order": 7}, time.time())
    assert after == []  # an event no longer reads it


def test_a_cancelled_jobs_token_answers_409_cancelled(fenced, aws):
    def code(payload: Any, context: JobContext) -> Any:
        return context.wait_for_token("decision", context.create_token("approval", timeout_seconds=600))

    fenced.code = code
    assert _deliver(_message()) == Outcome.SUSPENDED
    token_id = _record().public()["waiting_for"]["token"]

    control.cancel("acme", "jt-durable-1")

    with pytest.raises(Conflict, match="cancelled"):
        tokens.complete("acme", token_id, {"approved": True})
    assert token_items.get(token_id).state is token_items.TokenState.CANCELLED


# Tokens --------------------------------------------------------------------------------------------------


def test_a_token_completed_once_resumes_its_job_with_the_data(fenced, aws):
    def code(payload: Any, context: JobContext) -> Any:
        token = context.create_token("approval", timeout_seconds=600)
        context.step("mail", _count, "mail" if token["url"] else "")
        return context.wait_for_token("decision", token)

    fenced.code = code

    assert _deliver(_message()) == Outcome.SUSPENDED
    record = _record()
    token_id = record.public()["waiting_for"]["token"]
    assert calls == {"mail": 1}

    assert tokens.complete("acme", token_id, {"approved": True}) == {"id": token_id, "status": "completed"}
    with pytest.raises(Conflict):
        tokens.complete("acme", token_id, {"approved": False})

    assert [each["id"] for each in _wake_messages(aws)] == ["jt-durable-1"]
    assert _deliver(_message(), "wake") == Outcome.SUCCEEDED
    assert _record().result == {"approved": True}
    assert calls == {"mail": 1}


# The API's routes ------------------------------------------------------------------------------------------


def test_an_event_is_sent_once_per_id_and_a_bad_one_is_refused_naming_its_field(aws):
    key = tenants.create_key("acme")
    event = {"name": "payment.received", "data": {"order": 7}, "id": "pay-7"}

    first = answer("POST", "/v1/events", key, event)
    again = answer("POST", "/v1/events", key, event)
    fresh = answer("POST", "/v1/events", key, {"name": "payment.received"})
    too_long = answer("POST", "/v1/events", key, {"name": "n" * 257})

    assert first == again == (202, {"id": "pay-7"})
    assert fresh[0] == 202 and fresh[1]["id"].startswith("ev_")
    assert too_long[0] == 422 and "name" in json.dumps(too_long[1])
    sent = _wake_messages(aws)
    assert sorted(each["type"] for each in sent) == ["event", "event", "event"]  # one message per request
    assert len({each["id"] for each in sent}) == 2  # the same id twice is one job: one event


def test_a_token_completes_once_by_its_url_without_a_key_and_a_wrong_capability_is_not_found(aws):
    key = tenants.create_key("acme")
    now = time.time()
    token_id = "tk_" + "c" * 26
    token_items.create(token_id, "acme", "jt-durable-1", "approval", now + 600, now)
    url = durable_tokens.url("", id_secret(), "acme", token_id)

    wrong = answer("POST", url.replace(url.split("/")[-1][:4], "aaaa"), "", {"x": 1})
    first = answer("POST", url, "", {"approved": True})
    second = answer("POST", url, "", {"approved": False})
    keyed = answer("POST", f"/v1/tokens/{token_id}:complete", key, {"data": 1})

    assert wrong[0] == 404
    assert first == (200, {"id": token_id, "status": "completed"})
    assert second[0] == keyed[0] == 409
    assert token_items.get(token_id).data == {"approved": True}
