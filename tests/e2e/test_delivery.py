"""At-least-once delivery, once-recorded execution: a duplicated SQS message runs once."""

import time

from shared import ids
from shared.model.message import JobMessage
from tests.e2e.helpers import every_copy_claimed, outcome_writes

COPIES = 3


def test_a_duplicated_message_runs_once(api, deployed, chaos, job_id_secret):
    # Distinct SQS messages carrying the same job, as a redelivery or a double send would.
    job_id = ids.timed_id(job_id_secret, "demo")
    body = JobMessage(
        id=job_id, tenant="demo", type="sleep", payload={"seconds": 0.5}, max_attempts=3, enqueued_at=time.time()
    ).to_json()
    sqs = deployed.aws("sqs")
    url = deployed.queue_url()
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": body}, {"Id": "b", "MessageBody": body}])
    sqs.send_message(QueueUrl=url, MessageBody=body)

    job = api.wait(job_id)
    every_copy_claimed(chaos, job_id, COPIES)  # the one that ran, and the duplicates its record refused

    assert job["status"] == "succeeded"
    assert api.get(job_id)["attempts"] == 1
    assert outcome_writes(chaos, job_id, "succeeded") == 1
