"""Whatever arrives on the queue, nothing vanishes: a job without a payload runs, a message that cannot
run ends `dead` with its reason (or, without a verifiable id, in the DLQ with its reason), a forged
tenant takes over nothing, and a result too big to keep fails its job at once, saying so.

On the embedded stack the tests put messages straight on the queue with boto3. On AWS the queue policy
denies that to any principal but the API and Scheduler (the emulator does not enforce queue policies),
so there the worker's own checks are the second line, tested here."""

from __future__ import annotations

import json

import pytest
import requests

from shared import ids, settings
from tests.e2e.helpers import eventually, job_message


@pytest.fixture(scope="module", autouse=True)
def warm_api(deployed) -> None:
    """The API function's first (cold) start can outlast the client's 10 s timeout on a busy machine."""
    requests.get(f"{deployed.api_url}/v1/openapi.json", timeout=90)


@pytest.fixture
def send(deployed):
    if not deployed.emulated:
        pytest.skip("the queue policy denies direct sends outside the embedded stack")
    sqs, url = deployed.aws("sqs"), deployed.queue_url()

    def send_body(body: dict) -> None:
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body))

    return send_body


def _dead_letter(deployed, marker: str, timeout: float = 60) -> tuple[dict, str]:
    """The DLQ message whose body contains `marker`, and its reason. Messages looked at are hidden
    for a few seconds only (so a DLQ of more than 10 is paged through) and left for other tests."""
    sqs, url = deployed.aws("sqs"), deployed.queue_url(settings.DLQ_NAME)

    def found() -> tuple[dict, str] | None:
        for message in sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=3, MessageAttributeNames=["All"]
        ).get("Messages", []):
            if marker in message["Body"]:
                reason = message.get("MessageAttributes", {}).get("corral-reason", {}).get("StringValue", "")
                return json.loads(message["Body"]), reason
        return None

    return eventually(found, timeout=timeout, message=f"a dead letter containing {marker!r}")


def test_a_job_enqueued_without_a_payload_runs_with_a_null_payload(api):
    response = api.request("POST", "/v1/jobs", json={"type": "echo"})
    assert response.status_code == 202, response.text

    job = api.wait(response.json()["id"], timeout=60)

    assert (job["status"], job["result"]) == ("succeeded", None)


def test_a_wrong_typed_message_with_a_verifiable_id_ends_dead_with_its_reason(api, deployed, send, job_id_secret):
    job_id = ids.timed_id(job_id_secret, "demo")
    send(job_message(job_id, type=["echo"]))

    job = api.wait(job_id, timeout=60)

    assert job["status"] == "dead"
    assert "field 'type' must be a non-empty string" in job["error"]
    body, reason = _dead_letter(deployed, job_id)
    assert body["type"] == ["echo"]
    assert "field 'type'" in reason


def test_a_message_of_an_unknown_type_ends_dead_instead_of_queued_forever(api, send, job_id_secret):
    job_id = ids.timed_id(job_id_secret, "demo")
    send(job_message(job_id, type="no-such-type"))

    job = api.wait(job_id, timeout=60)

    assert job["status"] == "dead"
    assert "unknown job type 'no-such-type'" in job["error"]


def test_a_message_whose_id_does_not_verify_is_buried_with_its_reason_and_leaves_no_record(deployed, send):
    made_up = "jt" + "a" * 38
    message = job_message(made_up)
    send(message)

    body, reason = _dead_letter(deployed, message["payload"]["marker"])

    assert body["id"] == made_up
    assert "does not verify for tenant 'demo'" in reason
    item = deployed.aws("dynamodb").get_item(TableName=settings.TABLE_NAME, Key={"pk": {"S": f"job#{made_up}"}})
    assert "Item" not in item


def test_a_forged_tenant_does_not_take_over_another_tenants_job(api, other_tenant_api, deployed, send):
    job_id = api.enqueue("fail", {"times": 10}, max_attempts=3)
    api.wait(job_id, statuses=("failed", "dead"), timeout=60)  # attempt 1 failed: a retry is due

    forged = job_message(job_id, tenant="other-tenant")
    send(forged)

    _, reason = _dead_letter(deployed, forged["payload"]["marker"])
    assert "does not verify for tenant 'other-tenant'" in reason
    assert other_tenant_api.request("GET", f"/v1/jobs/{job_id}").status_code == 404
    job = api.get(job_id)
    assert job["type"] == "fail"
    assert job["result"] is None


def test_a_result_too_big_to_keep_fails_the_job_at_once_and_says_so(api):
    job_id = api.enqueue("bloat", {"bytes": settings.MAX_RESULT_BYTES + 1}, max_attempts=3)

    job = api.wait(job_id, timeout=60)

    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert f"over the limit of {settings.MAX_RESULT_BYTES} bytes" in job["error"]
