"""Fairness on the shared queue, on moto: every way a job message reaches the jobs queue carries the
tenant as its SQS message group (retries, DLQ redrives), and Scheduler targets carry it only
when the setting says Scheduler accepts it for a standard queue."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared import environment, settings
from shared.control import retry
from shared.jobs.enqueue import JobRequest, enqueue
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.operations import dead_letters
from shared.worker.delivery import Delivery
from tests.unit.worker_harness import work


def _received(aws: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """(MessageGroupId, body) of every message on the jobs queue (bounded)."""
    found = []
    for _ in range(20):
        got = (
            aws["sqs"]
            .receive_message(
                QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, MessageSystemAttributeNames=["MessageGroupId"]
            )
            .get("Messages", [])
        )
        if not got:
            break
        found += [(m.get("Attributes", {}).get("MessageGroupId"), json.loads(m["Body"])) for m in got]
        for message in got:
            aws["sqs"].delete_message(QueueUrl=aws["queue_url"], ReceiptHandle=message["ReceiptHandle"])
    return found


def test_a_retried_dead_job_is_sent_in_its_tenants_group(aws: dict[str, Any]) -> None:
    message = enqueue("acme", JobRequest(JobSpec("fail", payload={"times": 9}, max_attempts=1)))
    work(message, Delivery(message_id="m-1", body=message.to_json()))
    _received(aws)

    retry.retry("acme", message.id)

    assert [(group, body["id"]) for group, body in _received(aws)] == [("acme", message.id)]


def test_a_redriven_firing_is_sent_in_its_tenants_group_and_a_forged_tenant_in_none(aws: dict[str, Any]) -> None:
    firing = json.loads(JobMessage.firing_template("acme", "nightly", JobSpec("echo", {}, 3)))
    aws["sqs"].send_message(QueueUrl=aws["dlq_url"], MessageBody=json.dumps(firing))
    forged = {**firing, "tenant": "not a tenant name!"}
    aws["sqs"].send_message(QueueUrl=aws["dlq_url"], MessageBody=json.dumps(forged))

    dead_letters.redrive()

    groups = {body["tenant"]: group for group, body in _received(aws)}
    assert groups.get("acme") == "acme"
    assert groups.get("not a tenant name!", "never sent") in (None, "never sent")  # no group made of it


@pytest.mark.parametrize("sets_group", [False, True])
def test_scheduler_targets_carry_the_group_only_where_the_setting_allows(
    scheduler_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch, sets_group: bool
) -> None:
    environment.change(scheduler_sets_message_group=sets_group)
    message = enqueue("acme", JobRequest(JobSpec("echo"), run_at=datetime.now(UTC) + timedelta(hours=2)))

    entry = scheduler_env["scheduler"].get_schedule(Name=f"d-{message.id}", GroupName=settings.SCHEDULE_GROUP)

    expected = {"MessageGroupId": "acme"} if sets_group else None
    assert entry["Target"].get("SqsParameters") == expected
