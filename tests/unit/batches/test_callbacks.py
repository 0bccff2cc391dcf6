"""Completion callbacks on any job (shared/batches/callbacks.py): on_success / on_failure enqueued once the
job is recorded succeeded / dead, with its view as `parent`; once, however often its end is seen."""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.api.handler import handler as api_handler
from local.events import FakeLambdaContext, http_api_event
from shared import environment
from shared.batches import callbacks, follow_ups
from shared.errors import InvalidRequest
from shared.jobs import enqueue
from shared.jobs.enqueue import JobRequest
from shared.model.message import JobMessage
from shared.model.states import Status
from shared.store.jobs import job_store
from shared.tenants import rate_limit, tenants
from tests.receiver import Answer, receiver
from tests.unit.worker_harness import poll


def _post(key: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    answer = api_handler(http_api_event("POST", "/v1/jobs", body, key), FakeLambdaContext())
    return answer["statusCode"], json.loads(answer["body"])


def _drain(aws: dict[str, Any]) -> None:
    for _ in range(10):
        if poll(aws) is None:
            return


@pytest.fixture
def key(aws) -> str:
    return tenants.create_key("acme")


def test_on_success_runs_once_the_job_succeeded_with_its_view_as_parent(aws, key):
    body = {
        "type": "echo",
        "payload": {"n": 1},
        "on_success": {"type": "echo", "payload": {"note": "done"}},
        "on_failure": {"type": "echo"},
    }
    status, accepted = _post(key, body)
    assert status == 202

    _drain(aws)

    parent = job_store.get(accepted["id"])
    assert parent.callbacks["on_failure"] is None
    callback = job_store.get(parent.callbacks["on_success"])
    assert callback.status is Status.SUCCEEDED and callback.attempts == 1
    assert callback.result["note"] == "done"
    assert callback.result["parent"]["id"] == accepted["id"] and callback.result["parent"]["result"] == {"n": 1}
    assert callback.parent == {"kind": "job", "id": accepted["id"], "callback": "on_success"}


def test_on_failure_runs_once_the_job_is_dead(aws, key):
    body = {"type": "fail", "payload": {"times": 5}, "max_attempts": 1, "on_failure": {"type": "echo"}}
    accepted = _post(key, body)[1]

    _drain(aws)

    parent = job_store.get(accepted["id"])
    assert parent.status is Status.DEAD
    callback = job_store.get(parent.callbacks["on_failure"])
    assert callback.result["parent"]["status"] == "dead" and "failing on purpose" in callback.result["parent"]["error"]


def test_a_finished_jobs_end_seen_again_sends_its_callback_no_more(aws, key, monkeypatch):
    accepted = _post(key, {"type": "echo", "on_success": {"type": "echo"}})[1]
    _drain(aws)
    parent = job_store.get(accepted["id"])
    message = JobMessage.from_dict(
        {"id": parent.id, "tenant": "acme", "type": "echo", "payload": None, "max_attempts": 3, "enqueued_at": 1}
        | {"callbacks": {"on_success": {"type": "echo", "payload": None, "max_attempts": 3}}}
    )
    sent: list[str] = []
    monkeypatch.setattr(callbacks.queue, "send", lambda message, delay=0: sent.append(message.id))

    follow_ups.job_ended(message, Status.SUCCEEDED)

    assert sent == []


def test_a_callback_is_checked_as_a_job_and_refused_naming_its_field(aws, key):
    status, refused = _post(key, {"type": "echo", "on_success": {"type": "no-such-type"}})
    assert status == 422 and refused["fields"][0]["field"] == "on_success.type"

    status, refused = _post(key, {"type": "echo", "on_failure": {"type": "echo", "payload": [1, 2]}})
    assert status == 422 and refused["fields"][0]["field"] == "on_failure.payload"

    status, refused = _post(key, {"type": "echo", "on_success": {"type": "echo", "payload": {"parent": 1}}})
    assert status == 422 and refused["fields"][0]["field"] == "on_success.payload.parent"


def test_the_rate_limit_counts_a_jobs_callbacks_as_jobs(aws, monkeypatch):
    counted: list[int] = []
    monkeypatch.setattr(rate_limit, "check", lambda tenant, jobs=1: counted.append(jobs))
    request = JobRequest.from_fields({"type": "echo", "on_success": {"type": "echo"}, "on_failure": {"type": "echo"}})

    enqueue.enqueue("acme", request)

    assert counted == [3]


def test_both_callbacks_together_fit_in_a_payloads_limit(aws, key):
    half = {"type": "echo", "payload": {"text": "x" * 40_000}}
    status, refused = _post(key, {"type": "echo", "on_success": half, "on_failure": half})
    assert status == 413 and refused["fields"][0]["field"] == "on_failure"
    assert _post(key, {"type": "echo", "on_success": half})[0] == 202


def test_an_http_callback_is_a_callback_url_that_receives_the_view_in_its_body(aws, key, monkeypatch):
    callback = {"type": "http", "payload": {"url": "https://hooks.example.com/done", "body": {"order": 7}}}
    accepted = _post(key, {"type": "echo", "payload": {"n": 1}, "on_success": callback})[1]
    sent = []
    monkeypatch.setattr(callbacks.queue, "send", lambda message, delay=0: sent.append(message))
    poll(aws)

    (message,) = sent
    assert message.type == "http" and message.payload["url"] == "https://hooks.example.com/done"
    assert message.payload["body"]["order"] == 7
    assert message.payload["body"]["parent"]["id"] == accepted["id"]
    get = {"type": "http", "payload": {"url": "https://hooks.example.com/done", "method": "GET"}}
    status, refused = _post(key, {"type": "echo", "on_success": get})
    assert status == 422 and refused["fields"][0]["field"] == "on_success.payload.body"  # a GET carries no body


def test_R3_a_callbacks_parent_view_carries_no_payload_unless_asked_and_no_view_shows_header_values(
    aws, key, monkeypatch
):
    environment.change(http_allow_plain=True, http_allow_loopback=True, http_timeout_seconds=2)
    with receiver() as partner:
        path = partner.path(Answer(400, b"card declined"), Answer(400, b"card declined"))
        credential = {"Authorization": "Bearer sk_live_PARTNER_SECRET", "X-Partner-Ref": "acct-7"}
        charge = {"url": partner.url(path), "headers": credential, "body": {"charge": 5}}
        parent = {"type": "http", "max_attempts": 1, "payload": charge}
        notify = {"type": "http", "payload": {"url": "https://hooks.example.com/notify"}}  # a third party
        plain = _post(key, parent | {"on_failure": notify})[1]
        asked = _post(key, parent | {"on_failure": notify | {"include_parent_payload": True}})[1]
        sent: list[JobMessage] = []
        monkeypatch.setattr(callbacks.queue, "send", lambda message, delay=0: sent.append(message))

        _drain(aws)

        assert [request.headers["authorization"] for request in partner.received(path)] == [
            "Bearer sk_live_PARTNER_SECRET"
        ] * 2  # the worker sends the real headers
    by_parent = {message.parent["id"]: message.payload["body"]["parent"] for message in sent}
    assert by_parent[plain["id"]]["status"] == "dead" and "payload" not in by_parent[plain["id"]]
    shown = by_parent[asked["id"]]["payload"]
    assert shown["headers"] == {"Authorization": "[redacted]", "X-Partner-Ref": "[redacted]"}
    assert shown["body"] == {"charge": 5} and shown["url"] == charge["url"]
    assert "sk_live" not in json.dumps([message.to_dict() for message in sent])
    answer = api_handler(http_api_event("GET", f"/v1/jobs/{plain['id']}", None, key), FakeLambdaContext())
    assert json.loads(answer["body"])["payload"]["headers"] == {
        "Authorization": "[redacted]",
        "X-Partner-Ref": "[redacted]",
    }
    assert job_store.get(plain["id"]).payload["headers"] == credential  # the record keeps them to send


def test_only_a_jobs_callbacks_may_ask_for_their_parents_payload(aws, key):
    asking = {"type": "echo", "include_parent_payload": True}
    status, _ = _post(key, {"type": "echo", "on_success": asking})
    assert status == 202

    status, refused = _post(key, {"type": "echo", "on_success": asking | {"include_parent_payload": "yes"}})
    assert status == 422 and refused["fields"][0]["field"].startswith("on_success.include_parent_payload")
    batch = {"jobs": [{"type": "echo"}], "on_complete": asking}
    answer = api_handler(http_api_event("POST", "/v1/batches", batch, key), FakeLambdaContext())
    assert answer["statusCode"] == 422 and "include_parent_payload" in json.loads(answer["body"])["fields"][0]["field"]
    with pytest.raises(InvalidRequest, match="a job's callbacks only") as refused_batch:
        enqueue.check_callback("acme", asking, field="on_complete", adds="batch")
    assert refused_batch.value.field == "on_complete.include_parent_payload"
