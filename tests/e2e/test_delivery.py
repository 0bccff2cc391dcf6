"""At-least-once delivery, once-recorded execution: a duplicated SQS message runs once."""

import time
import uuid

from shared.model import JobMessage


def test_a_duplicated_message_runs_once(api, deployed):
    # Two distinct SQS messages carrying the same job, as a redelivery or a double send would.
    job_id = f"jdup{uuid.uuid4().hex}"
    body = JobMessage(
        id=job_id, tenant="demo", type="sleep", payload={"seconds": 0.5}, max_attempts=3, enqueued_at=time.time()
    ).to_json()
    sqs = deployed.aws("sqs")
    url = deployed.queue_url()
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": body}, {"Id": "b", "MessageBody": body}])
    sqs.send_message(QueueUrl=url, MessageBody=body)

    # The id is not one the API minted, so it answers 404 until a worker has recorded the job.
    deadline = time.monotonic() + 30
    while api.request("GET", f"/v1/jobs/{job_id}").status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.25)
    job = api.wait(job_id)
    time.sleep(2)  # let every copy be delivered and acked

    assert api.job(job_id)["attempts"] == 1
    assert job["status"] == "succeeded"
