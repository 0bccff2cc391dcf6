"""Nothing reaches the dead-letter queue unrecorded, end to end: a live job's message put in the jobs
queue's dead-letter queue (the backstop, SQS's redrive target) behind the platform's back ends its job
`dead` with the reason within a minute, and the message lands in the DLQ with that reason, where
operators redrive it (docs/decisions/dead-jobs-and-the-dlq.md).

The job's own message stays on the jobs queue, delayed 15 minutes, as a job waiting would: when it comes
back, the worker finds its job finished and acknowledges it unrun. On AWS the backstop's policy denies
the send to anyone but Scheduler; the embedded emulator does not enforce queue policies.
"""

from __future__ import annotations

import json

import pytest

from shared import ids, settings
from tests.e2e.helpers import dlq_bodies, job_message

RECORDED_WITHIN_SECONDS = 60


def test_a_live_jobs_message_moved_to_the_dead_letter_queue_ends_it_dead_with_the_reason(api, deployed, job_id_secret):
    if not deployed.emulated:
        pytest.skip("the backstop's policy denies direct sends outside the embedded stack")
    sqs = deployed.aws("sqs")
    job_id = ids.timed_id(job_id_secret, "demo")
    body = json.dumps(job_message(job_id))
    sqs.send_message(QueueUrl=deployed.queue_url(), MessageBody=body, DelaySeconds=settings.MAX_SQS_DELAY_SECONDS)
    assert api.get(job_id)["status"] == "queued"

    sqs.send_message(QueueUrl=deployed.queue_url(settings.BACKSTOP_NAME), MessageBody=body)

    job = api.wait(job_id, statuses=("dead",), timeout=RECORDED_WITHIN_SECONDS)
    assert "no outcome recorded" in job["error"]
    (buried,) = dlq_bodies(deployed, job_id)
    assert buried["_reason"] == job["error"] and buried["payload"] == json.loads(body)["payload"]
