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
    """DLQ messages of one job. Other tests' messages are left visible (VisibilityTimeout=0)."""
    sqs = deployed.aws("sqs")
    url = deployed.queue_url(settings.DLQ_NAME)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        received = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0, MessageAttributeNames=["All"]
        ).get("Messages", [])
        mine = [
            json.loads(m["Body"]) | {"_reason": m["MessageAttributes"]["corral-reason"]["StringValue"]}
            for m in received
            if json.loads(m["Body"]).get("id") == job_id
        ]
        if mine:
            return mine
        time.sleep(0.5)
    return []


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
