"""The enqueue rate limit and fairness over HTTP: a tenant over its limit is answered 429 with
Retry-After while another tenant is not, and every job message carries its tenant as MessageGroupId."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from local.deploy import create_api_key
from local.prewarm import jobs_queue_mapping
from shared import settings
from tests.e2e.helpers import eventually

MAX_REQUESTS = 20  # far more than the limited tenant's burst on every API instance the emulator runs


@pytest.fixture(scope="module")
def limited(deployed) -> tuple[str, str]:
    """A new tenant whose enqueue limit is 0.2 jobs/s with bursts of 3 (set before its first request,
    so no API instance has its defaults cached)."""
    deployed.require_aws()
    tenant = f"slow-{uuid.uuid4().hex[:8]}"
    key = create_api_key(deployed.aws_env, tenant, label="tests")
    limits = {"enqueue_rate_per_second": {"N": "0.2"}, "enqueue_burst": {"N": "3"}}
    deployed.aws("dynamodb").update_item(
        TableName=settings.TABLE_NAME,
        Key={"pk": {"S": f"tenant#{tenant}"}},
        UpdateExpression="SET #l = :l",
        ExpressionAttributeNames={"#l": "limits"},
        ExpressionAttributeValues={":l": {"M": limits}},
    )
    return tenant, key


def test_a_tenant_over_its_rate_gets_429_with_retry_after_and_another_tenant_does_not(deployed, api, limited):
    _tenant, key = limited
    slow = deployed.client(key)
    answers = []
    for n in range(MAX_REQUESTS):
        response = slow.request("POST", "/v1/jobs", json={"type": "echo", "payload": {"n": n}})
        answers.append(response)
        if response.status_code == 429:
            break
    statuses = [response.status_code for response in answers]
    assert set(statuses) <= {202, 429}, statuses
    assert statuses[-1] == 429, f"never limited in {MAX_REQUESTS} requests: {statuses}"
    refused = answers[-1]
    body = refused.json()
    assert body["error"] == "rate_limited" and "enqueue_rate_per_second" in body["message"], body
    retry_after = int(refused.headers["Retry-After"])
    assert retry_after >= 1 and body["retry_after_seconds"] == retry_after

    batch = slow.request("POST", "/v1/jobs:batch", json={"jobs": [{"type": "echo"}, {"type": "echo"}]})
    assert batch.status_code == 429 and batch.json()["error"] == "rate_limited"  # all or nothing

    unaffected = api.request("POST", "/v1/jobs", json={"type": "echo", "payload": {}})
    assert unaffected.status_code == 202, unaffected.text


def test_every_job_message_carries_its_tenant_as_message_group(deployed, api, other_tenant_api):
    lambda_ = deployed.aws("lambda")
    sqs = deployed.aws("sqs")
    url = deployed.queue_url()
    mapping = jobs_queue_mapping(lambda_)
    lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    try:
        time.sleep(1.5)  # a poll already under way finishes
        ours = {api.enqueue("echo", {"n": 1}): None, other_tenant_api.enqueue("echo", {"n": 2}): None}
        ours |= {outcome.id: None for outcome in api.enqueue_many([{"type": "echo"}, {"type": "echo"}])}
        groups: dict[str, tuple[str | None, str]] = {}

        def all_received() -> dict[str, tuple[str | None, str]]:
            got = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["MessageGroupId"], WaitTimeSeconds=1
            ).get("Messages", [])
            for message in got:
                body = json.loads(message["Body"])
                if body.get("id") in ours:
                    groups[body["id"]] = (message["Attributes"].get("MessageGroupId"), body["tenant"])
                sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
            assert set(groups) == set(ours), f"received {len(groups)} of {len(ours)}: {groups}"
            return groups

        eventually(all_received, timeout=20, interval=0, message="every message sent to be received")
        assert all(group == tenant for group, tenant in groups.values()), groups
        assert len({tenant for _, tenant in groups.values()}) == 2
    finally:
        lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=True)
