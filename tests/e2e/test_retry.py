"""Failing jobs retry with backoff up to max_attempts, then go dead with their message in the DLQ."""

import json
import time

from shared import settings


def test_a_failing_job_is_retried_until_it_succeeds(api):
    job_id = api.enqueue("fail", {"times": 2}, max_attempts=3)

    job = api.wait(job_id, timeout=90)

    assert job["status"] == "succeeded"
    assert job["attempts"] == 3
    assert job["result"] == {"succeeded_on_attempt": 3}


def _dlq_bodies(deployed, job_id: str, timeout: float = 30) -> list[dict]:
    """DLQ messages of one job. The DLQ holds other tests' messages too, more than one receive returns:
    each message looked at is hidden for a few seconds so the next receive reaches the rest."""
    sqs = deployed.aws("sqs")
    url = deployed.queue_url(settings.DLQ_NAME)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        received = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=5, MessageAttributeNames=["All"]
        ).get("Messages", [])
        mine = [
            json.loads(m["Body"]) | {"_reason": m["MessageAttributes"]["corral-reason"]["StringValue"]}
            for m in received
            if _job_id_of(m["Body"]) == job_id
        ]
        if mine:
            return mine
        if not received:
            time.sleep(0.5)
    return []


def _job_id_of(body: str) -> str | None:
    try:
        found = json.loads(body)
    except ValueError:
        return None  # the DLQ also holds unreadable messages other tests sent
    return found.get("id") if isinstance(found, dict) else None


def test_a_job_that_keeps_failing_ends_dead_with_its_message_in_the_dlq(api, deployed):
    job_id = api.enqueue("fail", {"times": 10}, max_attempts=2)

    job = api.wait(job_id, timeout=90)

    assert job["status"] == "dead"
    assert job["attempts"] == 2
    assert "failing on purpose" in job["error"]
    dead_letters = _dlq_bodies(deployed, job_id)
    assert len(dead_letters) == 1
    assert "failing on purpose" in dead_letters[0]["_reason"]
    assert dead_letters[0]["type"] == "fail"
