"""What several end-to-end tests read back: a job's dead letters, and its outcome writes that reached the store."""

from __future__ import annotations

import json
import time
import uuid

from local.chaos import Chaos
from local.platform import Platform
from shared import settings


def outcome_writes(chaos: Chaos, job_id: str, status: str) -> int:
    """Successful writes of `status` to one job's record that reached the store (counted by the sidecars)."""
    return sum(
        1
        for r in chaos.store_requests(job_id)
        if r["operation"] == "UpdateItem" and r["sets_status"] == status and r["http_status"] == 200
    )


def job_message(job_id: str, **fields: object) -> dict:
    """A demo tenant's `echo` job message, as the API would send it (`fields` change or add to it)."""
    return {
        "v": 1,
        "id": job_id,
        "tenant": "demo",
        "type": "echo",
        "payload": {"marker": uuid.uuid4().hex},
        "max_attempts": 3,
        "enqueued_at": time.time(),
    } | fields


def dlq_bodies(deployed: Platform, job_id: str, timeout: float = 30) -> list[dict]:
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
