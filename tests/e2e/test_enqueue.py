"""Enqueue -> run -> status, and idempotency keys, through the HTTP API."""

import uuid


def test_echo_job_runs_and_reports_its_result(api):
    job_id = api.enqueue("echo", {"hello": "world", "n": [1, 2.5]})

    job = api.wait(job_id)

    assert job["status"] == "succeeded"
    assert job["result"] == {"hello": "world", "n": [1, 2.5]}
    assert job["type"] == "echo"
    assert job["attempts"] == 1
    assert job["enqueued_at"] <= job["started_at"] <= job["finished_at"]


def test_a_job_no_worker_has_seen_yet_reports_queued(api):
    # Without an idempotency key (the SDK always sends one), so the id is a timed one carrying its enqueue time.
    body = {"type": "echo", "payload": {"later": True}, "delay_seconds": 30}
    job_id = api.request("POST", "/v1/jobs", json=body).json()["id"]

    job = api.get(job_id)

    assert job["status"] == "queued"
    assert job["attempts"] == 0
    assert job["enqueued_at"] is not None


def test_same_idempotency_key_gives_the_same_job_which_runs_once(api):
    key = f"order-{uuid.uuid4()}"

    first = api.enqueue("echo", {"order": 1}, idempotency_key=key)
    second = api.enqueue("echo", {"order": 1}, idempotency_key=key)
    job = api.wait(first)

    assert second == first
    assert job["status"] == "succeeded"
    assert job["attempts"] == 1


def test_idempotency_keys_are_scoped_to_the_tenant(api, other_tenant_api):
    key = f"shared-key-{uuid.uuid4()}"

    assert api.enqueue("echo", 1, idempotency_key=key) != other_tenant_api.enqueue("echo", 1, idempotency_key=key)
