"""Unique jobs at enqueue (shared/store/flow/unique_keys.py, shared/store/flow/unique_locks.py; moto, the API handler
in-process): while a job with the key waits (or, `until: finished`, until it ends), another with the key is answered
200 with that job's id and `duplicate`, and nothing is sent; once the holder started (or ended) the key is free;
bad input is a 422 naming the field; a failed send frees the key at once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shared import settings
from shared.aws import queue
from shared.jobs import registry
from shared.model.message import JobMessage
from shared.store.flow import unique_locks
from shared.tenants import tenants
from shared.worker.delivery import Delivery
from tests.unit.api_harness import answer as _api
from tests.unit.worker_harness import work


@pytest.fixture
def key(aws) -> str:
    return tenants.create_key("acme")


def _drain(aws: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    while got := aws["sqs"].receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10).get("Messages", []):
        found += [json.loads(m["Body"]) for m in got]
        for m in got:
            aws["sqs"].delete_message(QueueUrl=aws["queue_url"], ReceiptHandle=m["ReceiptHandle"])
    return found


def _run(body: dict[str, Any]) -> str:
    message = JobMessage.from_dict(body)
    return work(message, Delivery(message_id=f"m-{message.id}", body=message.to_json()))


def _job(until: str = "started", **extra: Any) -> dict[str, Any]:
    return {"type": "echo", "payload": {"n": 1}, "unique": {"key": "report-42", "until": until}, **extra}


def test_a_unique_key_answers_duplicate_while_its_job_waits_and_is_free_once_it_started(aws, key):
    status, first = _api("POST", "/v1/jobs", key, _job())
    assert (status, first["status"]) == (202, "queued")
    status, again = _api("POST", "/v1/jobs", key, _job())
    assert (status, again) == (200, {"id": first["id"], "status": "duplicate"})
    sent = _drain(aws)
    assert [body["id"] for body in sent] == [first["id"]]  # the duplicate sent nothing
    assert _run(sent[0]) == "succeeded"
    status, later = _api("POST", "/v1/jobs", key, _job())
    assert (status, later["status"]) == (202, "queued") and later["id"] != first["id"]


def test_until_finished_holds_the_key_while_the_job_runs_and_frees_it_when_it_ends(aws, key):
    _, first = _api("POST", "/v1/jobs", key, _job("finished"))
    [body] = _drain(aws)
    # Its record says running: a `finished` lock still holds.
    aws["dynamodb"].put_item(
        TableName=settings.TABLE_NAME,
        Item={"pk": {"S": f"job#{first['id']}"}, "status": {"S": "running"}, "tenant": {"S": "acme"}},
    )
    assert _api("POST", "/v1/jobs", key, _job("finished")) == (200, {"id": first["id"], "status": "duplicate"})
    assert unique_locks.read("acme", "report-42").holder == first["id"]
    aws["dynamodb"].delete_item(TableName=settings.TABLE_NAME, Key={"pk": {"S": f"job#{first['id']}"}})
    assert _run(body) == "succeeded"
    status, later = _api("POST", "/v1/jobs", key, _job("finished"))
    assert (status, later["status"]) == (202, "queued")


def test_another_tenants_key_is_its_own(aws, key):
    other = tenants.create_key("globex")
    assert _api("POST", "/v1/jobs", key, _job())[0] == 202
    assert _api("POST", "/v1/jobs", other, _job())[0] == 202


def test_in_a_bulk_request_the_second_job_with_a_key_is_a_duplicate_of_the_first(aws, key):
    status, body = _api("POST", "/v1/jobs:batch", key, {"jobs": [_job(), _job(), {"type": "echo"}]})
    assert status == 202, body
    first, second, plain = body["results"]
    assert (first["status"], second, plain["status"]) == (
        "queued",
        {"index": 1, "id": first["id"], "status": "duplicate"},
        "queued",
    )
    assert len(_drain(aws)) == 2


@pytest.mark.parametrize(
    ("unique", "field"),
    [
        ({"key": "k" * 129, "until": "started"}, "unique.key"),
        ({"key": "k", "until": "later"}, "unique.until"),
        ({"key": "k", "until": "started", "for_seconds": 0}, "unique.for_seconds"),
        ({"key": "k"}, "unique.until"),
    ],
)
def test_bad_unique_input_is_a_422_naming_the_field_and_nothing_is_sent(aws, key, unique, field):
    status, body = _api("POST", "/v1/jobs", key, {"type": "echo", "unique": unique})
    assert status == 422, body
    assert field in (body.get("field"), *(found["field"] for found in body.get("fields", [])))
    assert _drain(aws) == []


def test_a_batch_members_bad_unique_is_a_422_naming_the_member_and_no_key_is_taken(aws, key):
    bad = {**_job(), "unique": {"key": "report-42", "until": "started", "for_seconds": 0}}
    status, body = _api("POST", "/v1/batches", key, {"jobs": [_job(), bad]})
    assert status == 422
    assert "jobs[1].unique.for_seconds" in (body.get("field"), *(found["field"] for found in body.get("fields", [])))
    assert unique_locks.read("acme", "report-42") is None
    assert _drain(aws) == []


def test_a_failed_send_frees_the_key_at_once(aws, key, monkeypatch):
    real_send, down = queue.send, [True]

    def send(*args: Any, **kwargs: Any) -> Any:
        if down[0]:
            raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "injected"}}, "SendMessage")
        return real_send(*args, **kwargs)

    monkeypatch.setattr(queue, "send", send)
    status, _ = _api("POST", "/v1/jobs", key, _job())
    assert status >= 500
    down[0] = False
    status, body = _api("POST", "/v1/jobs", key, _job())
    assert (status, body["status"]) == (202, "queued")


def test_a_type_default_reads_the_key_from_the_payload(aws, key):
    name = "unique-report"
    registry.job_type(name, unique={"key": "report", "until": "started"})(lambda payload, context: payload)
    try:
        assert _api("POST", "/v1/jobs", key, {"type": name, "payload": {"report": 7}})[0] == 202
        status, body = _api("POST", "/v1/jobs", key, {"type": name, "payload": {"report": 7}})
        assert (status, body["status"]) == (200, "duplicate")
        assert _api("POST", "/v1/jobs", key, {"type": name, "payload": {"report": 8}})[0] == 202
        status, body = _api("POST", "/v1/jobs", key, {"type": name, "payload": {}})
        assert (status, body["field"]) == (422, "payload")
    finally:
        registry.REGISTRY.pop(name, None)


def test_a_type_with_a_bad_default_fails_its_registration():
    with pytest.raises(ValueError, match=r"unique\.until"):
        registry.job_type("bad-unique", unique={"key": "report", "until": "never"})


def test_the_cli_unique_flag_reads_key_until_and_seconds():
    from cli.common import CliError
    from cli.flow import unique_option

    assert unique_option("report-42") == {"key": "report-42", "until": "started"}
    assert unique_option("r:finished:3600") == {"key": "r", "until": "finished", "for_seconds": 3600}
    for bad in (":started", "r:later", "r:started:soon"):
        with pytest.raises(CliError):
            unique_option(bad)
