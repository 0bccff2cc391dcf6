"""An idempotency key names one request (moto, the API handler in-process): the same request again answers
as the first did, and another request with the key answers 409 naming `idempotency_key`, with nothing
written or sent. Batches, schedule triggers, signing-secret rotations; and POST /v1/jobs, which writes
nothing at enqueue, so its job's record says which request ran."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from shared import ids
from shared.aws import queue
from shared.batches import batches
from shared.jobs.enqueue import JobRequest
from shared.model.message import JobMessage
from shared.model.spec import Callback, JobSpec
from shared.model.states import Status
from shared.schedules import definitions, lifecycle, runs
from shared.store.batches import batch_items
from shared.store.jobs import job_claims
from shared.tenants import rate_limit, tenants
from shared.worker.delivery import Delivery
from tests.unit.api_harness import answer as _api
from tests.unit.worker_harness import RetryLater, work


@pytest.fixture
def key(aws) -> str:
    return tenants.create_key("acme")


def _queued(aws: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message visible on the jobs queue (a delayed one is not, until its delay ends)."""
    found = []
    while got := aws["sqs"].receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10).get("Messages", []):
        found += [json.loads(m["Body"]) for m in got]
    return found


def _assert_key_refused(answer: tuple[int, Any]) -> None:
    status, body = answer
    assert status == 409, body
    assert (body["error"], body["field"]) == ("conflict", "idempotency_key")


# --- batches ----------------------------------------------------------------------------------------


def test_batch_idempotency_key_with_other_jobs_is_refused_and_the_first_batch_keeps_its_jobs(aws, key):
    first_body = {
        "jobs": [{"type": "echo", "payload": {"order": 1}, "delay_seconds": 600}, {"type": "echo", "payload": 2}],
        "idempotency_key": "nightly-2026-12-05",
    }
    other_body = {"jobs": [{"type": "echo", "payload": "other"}] * 2, "idempotency_key": "nightly-2026-12-05"}
    status, first = _api("POST", "/v1/batches", key, first_body)
    assert status == 201
    assert [body["payload"] for body in _queued(aws)] == [2]  # the other waits its 600 s

    _assert_key_refused(_api("POST", "/v1/batches", key, other_body))  # the same number of jobs, other jobs

    assert _queued(aws) == []  # nothing sent under the first batch's members' ids, which would have run first
    assert _delayed(aws) == 1  # the first request's delayed job still waits to run as its member
    shown = _api("GET", f"/v1/batches/{first['id']}", key)[1]
    assert (shown["total"], shown["pending"]) == (2, 2)


def _delayed(aws: dict[str, Any]) -> int:
    attributes = aws["sqs"].get_queue_attributes(
        QueueUrl=aws["queue_url"], AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessagesDelayed"])


def test_the_same_batch_request_again_answers_as_the_first_did(aws, key):
    body = {
        "jobs": [{"type": "echo", "payload": {"b": 1, "a": [1, 2]}}, {"type": "echo"}],
        "on_complete": {"type": "echo", "payload": {}},
        "idempotency_key": "k1",
    }
    # The same request: the same fields in another order, a field given as null where it was left out.
    again_body = {
        "idempotency_key": "k1",
        "on_complete": {"payload": {}, "type": "echo", "max_attempts": None},
        "jobs": [{"payload": {"a": [1, 2], "b": 1}, "type": "echo"}, {"type": "echo", "payload": None}],
    }
    first = _api("POST", "/v1/batches", key, body)
    _queued(aws)
    again = _api("POST", "/v1/batches", key, again_body)

    assert first == again
    assert first[0] == 201 and first[1]["status"] == "running"
    assert _queued(aws) == []  # the first sent every job: the repeat sends none


def test_a_repeated_batch_request_whose_first_could_not_send_every_job_sends_them_all(aws, key, monkeypatch):
    body = {"jobs": [{"type": "echo", "payload": n} for n in range(3)], "idempotency_key": "k2"}
    real = queue.send_batch
    monkeypatch.setattr(queue, "send_batch", lambda messages: [None, "throttled", None][: len(messages)])
    assert _api("POST", "/v1/batches", key, body)[0] == 503
    monkeypatch.setattr(queue, "send_batch", real)

    status, created = _api("POST", "/v1/batches", key, body)

    assert status == 201
    assert sorted(message["payload"] for message in _queued(aws)) == [0, 1, 2]
    assert batch_items.get(created["id"]).all_sent_at is not None


def test_a_repeated_batch_request_answered_from_its_key_counts_one(aws, key, monkeypatch):
    body = {"jobs": [{"type": "echo"}] * 50, "idempotency_key": "k3"}
    assert _api("POST", "/v1/batches", key, body)[0] == 201
    asked: list[int] = []
    real = rate_limit.check
    monkeypatch.setattr(rate_limit, "check", lambda tenant, count=1: asked.append(count) or real(tenant, count))

    assert _api("POST", "/v1/batches", key, body)[0] == 201
    assert asked == [1]


def test_another_request_cannot_replace_a_keyed_batchs_callbacks(aws, key):
    """Two requests with one key racing: the second's write finds the batch, and its callbacks are not written."""
    first = batches.BatchRequest([JobRequest(JobSpec("echo"))], on_complete={"type": "echo"}, idempotency_key="k4")
    batch = batches.create("acme", first)
    stored = batch_items.callback_specs(batch.id)

    other = {"on_complete": Callback(JobSpec("sleep", max_attempts=3))}
    found = batch_items.create(batch.id, "acme", 1, 0.0, description=None, callbacks=other)

    assert found.request == first.fingerprint()  # the caller compares it, and refuses the other request
    assert batch_items.callback_specs(batch.id) == stored == {"on_complete": Callback(JobSpec("echo", max_attempts=3))}


def test_a_batch_kept_without_a_fingerprint_is_compared_by_its_size(aws, key):
    """Batches made before fingerprints were kept: the same key with another number of jobs is refused, as before."""
    batch_id = ids.batch_id(batches.id_secret(), "acme", 0.0, "old-key")
    batch_items.create(batch_id, "acme", 2, 0.0, description=None, callbacks={})

    _assert_key_refused(_api("POST", "/v1/batches", key, {"jobs": [{"type": "echo"}], "idempotency_key": "old-key"}))
    assert _api("POST", "/v1/batches", key, {"jobs": [{"type": "echo"}] * 2, "idempotency_key": "old-key"})[0] == 201


# --- POST /v1/jobs: nothing stored at enqueue; the record says which request runs --------------------------


def _enqueued(key: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = _api("POST", "/v1/jobs", key, body)
    assert status == 202, answer
    return answer


def test_the_same_keyed_job_request_answers_as_the_first_did(aws, key):
    body = {"type": "echo", "payload": {"n": 1}, "idempotency_key": "order-1"}
    first = _enqueued(key, body)

    assert _enqueued(key, {"idempotency_key": "order-1", "payload": {"n": 1}, "type": "echo", "run_at": None}) == first
    assert first["request"] == ids.request_fingerprint({"type": "echo", "payload": {"n": 1}})
    assert "request" not in _enqueued(key, {"type": "echo"})  # without a key, nothing to tell apart


def test_a_keyed_job_sent_by_two_requests_runs_one_and_its_view_says_which(aws, key):
    first = _enqueued(key, {"type": "echo", "payload": {"n": 1}, "idempotency_key": "order-2"})
    other = _enqueued(key, {"type": "echo", "payload": {"n": 2}, "idempotency_key": "order-2"})
    assert first["id"] == other["id"] and first["request"] != other["request"]

    messages = _queued_messages(aws)
    assert [work(message, _delivery(message)) for message in messages] == ["succeeded", "duplicate"]

    shown = _api("GET", f"/v1/jobs/{first['id']}", key)[1]
    assert (shown["status"], shown["attempts"], shown["payload"]) == ("succeeded", 1, {"n": 1})
    assert shown["request"] == first["request"]  # the first request ran; the other's never did


def test_another_requests_message_never_runs_a_retry_of_a_keyed_job(aws, key):
    """The first request's attempt failed with attempts left: the other request's message must not run
    its own payload as the job's next attempt (it is acknowledged unrun, its callbacks too)."""
    first = _enqueued(key, {"type": "fail", "payload": {"times": 1}, "max_attempts": 3, "idempotency_key": "k5"})
    other_body = {"type": "fail", "payload": {"times": 9}, "idempotency_key": "k5", "on_failure": {"type": "echo"}}
    _enqueued(key, other_body)
    first_message, other_message = _queued_messages(aws)
    with pytest.raises(RetryLater):  # failed: its message comes back for the retry
        work(first_message, _delivery(first_message))

    assert work(other_message, _delivery(other_message)) == "duplicate"
    assert work(first_message, _delivery(first_message, "again")) == "succeeded"  # its retry, its own payload

    shown = _api("GET", f"/v1/jobs/{first['id']}", key)[1]
    assert (shown["status"], shown["attempts"], shown["request"]) == ("succeeded", 2, first["request"])
    assert _queued_messages(aws) == []  # the other request's on_failure never ran


def test_a_retried_keyed_job_keeps_its_request(aws, key):
    from shared.control import retry

    first = _enqueued(key, {"type": "fail", "payload": {"times": 9}, "max_attempts": 1, "idempotency_key": "k6"})
    (message,) = _queued_messages(aws)
    assert work(message, _delivery(message)) == "dead"

    retried = retry.retry("acme", first["id"])

    assert retried.request == first["request"]
    assert isinstance(job_claims.claim(retried, "m-retry", time.time(), 60), job_claims.Claimed)


def _queued_messages(aws: dict[str, Any]) -> list[JobMessage]:
    return [JobMessage.from_dict(body) for body in _queued(aws)]


def _delivery(message: JobMessage, attempt: str = "") -> Delivery:
    return Delivery(message_id=f"m-{message.request}{attempt}", body=message.to_json())


# --- schedule triggers ----------------------------------------------------------------------------------


def _schedule(overlap: str = "skip") -> None:
    request = definitions.ScheduleRequest("report", "rate(1 hour)", JobSpec("echo"), overlap=overlap)
    lifecycle.create("acme", request)


def _claim_next(aws: dict[str, Any]) -> job_claims.ClaimResult:
    (message,) = _queued_messages(aws)
    return job_claims.claim(message, f"m-{message.id}", time.time(), 300)


def test_a_retried_trigger_answers_queued_as_the_first_did_though_its_claim_skipped_the_run(scheduler_env, key):
    _schedule()
    first = _api("POST", "/v1/schedules/report:trigger", key, {"idempotency_key": "t1"})
    assert first[0] == 202
    keyed_message = _queued_messages(scheduler_env)
    other = runs.trigger("acme", "report")  # a second run, started before the first is claimed
    assert isinstance(_claim_next(scheduler_env), job_claims.Claimed)
    claimed = job_claims.claim(keyed_message[0], "m-keyed", time.time(), 300)
    assert isinstance(claimed, job_claims.Skipped)  # skipped at its claim: the other run was live

    again = _api("POST", "/v1/schedules/report:trigger", key, {"idempotency_key": "t1"})

    assert again == first == (202, {"id": first[1]["id"], "status": "queued"})
    assert other.status is Status.QUEUED
    assert _queued_messages(scheduler_env) == []  # not sent again


def test_a_retried_trigger_that_the_first_skipped_answers_skipped_again(scheduler_env, key):
    _schedule()
    runs.trigger("acme", "report")
    assert isinstance(_claim_next(scheduler_env), job_claims.Claimed)  # a live run
    first = _api("POST", "/v1/schedules/report:trigger", key, {"idempotency_key": "t2"})
    assert first[0] == 200 and first[1]["status"] == "skipped"

    assert _api("POST", "/v1/schedules/report:trigger", key, {"idempotency_key": "t2"}) == first


# --- signing-secret rotation -----------------------------------------------------------------------------


def test_a_rotation_retried_with_its_key_adds_no_second_secret_and_answers_as_the_first(aws, key):
    _api("GET", "/v1/signing-secrets", key)  # the tenant's first secret
    first = _api("POST", "/v1/signing-secrets:rotate", key, {"idempotency_key": "r1"})
    assert first[0] == 201 and len(first[1]["secrets"]) == 2

    assert _api("POST", "/v1/signing-secrets:rotate", key, {"idempotency_key": "r1", "destination": None}) == first
    assert len(_api("GET", "/v1/signing-secrets", key)[1]["secrets"]) == 2


def test_a_rotation_key_reused_for_another_destination_is_refused(aws, key):
    _api("POST", "/v1/signing-secrets:rotate", key, {"idempotency_key": "r2"})
    before = _api("GET", "/v1/signing-secrets", key)[1]

    other = {"idempotency_key": "r2", "destination": "https://hooks.example.com"}
    _assert_key_refused(_api("POST", "/v1/signing-secrets:rotate", key, other))

    assert _api("GET", "/v1/signing-secrets", key)[1] == before
    same_origin = {"idempotency_key": "r3", "destination": "https://hooks.example.com"}
    made = _api("POST", "/v1/signing-secrets:rotate", key, same_origin)
    spelled_otherwise = {"idempotency_key": "r3", "destination": "HTTPS://Hooks.Example.com:443/"}
    assert _api("POST", "/v1/signing-secrets:rotate", key, spelled_otherwise) == made  # the same origin


def test_rotations_without_a_key_each_add_a_secret(aws, key):
    _api("GET", "/v1/signing-secrets", key)  # the tenant's first secret
    for _ in range(3):
        assert _api("POST", "/v1/signing-secrets:rotate", key)[0] == 201
    assert len(_api("GET", "/v1/signing-secrets", key)[1]["secrets"]) == 4
