"""Failing jobs retry with backoff up to max_attempts, then go dead with their message in the DLQ."""

from tests.e2e.helpers import dlq_bodies


def test_a_failing_job_is_retried_until_it_succeeds(api):
    job_id = api.enqueue("fail", {"times": 2}, max_attempts=3)

    job = api.wait(job_id, timeout=90)

    assert job["status"] == "succeeded"
    assert job["attempts"] == 3
    assert job["result"] == {"succeeded_on_attempt": 3}


def test_a_job_that_keeps_failing_ends_dead_with_its_message_in_the_dlq(api, deployed):
    job_id = api.enqueue("fail", {"times": 10}, max_attempts=2)

    job = api.wait(job_id, timeout=90)

    assert job["status"] == "dead"
    assert job["attempts"] == 2
    assert "failing on purpose" in job["error"]
    dead_letters = dlq_bodies(deployed, job_id)
    assert len(dead_letters) == 1
    assert "failing on purpose" in dead_letters[0]["_reason"]
    assert dead_letters[0]["type"] == "fail"
