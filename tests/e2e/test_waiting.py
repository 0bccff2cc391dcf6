"""Waiting never spends the receive budget, end to end: on the embedded stack (its budget is scaled down
to 10 receives, tests/e2e/conftest.py) a job waits for its tenant's running slot through more receives than the jobs
queue allows a message, then runs to `succeeded`, never dead-lettered (docs/decisions/waiting-keeps-its-place.md).

The slot is held behind the platform's back (written into the table as another batch would), and the
job's receives are counted at the fault proxy: each receive of a job over its cap is one conditional
write to its tenant's running-slots item, which fails.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest
import requests

from local.deploy import create_api_key, function_environment
from shared.store import keys
from shared.store.tenants import running_slots
from shared.tenants import quotas
from tests.e2e.conftest import TEST_RECEIVE_BUDGET
from tests.e2e.helpers import dlq_bodies, eventually

HOLDER = "e2e-held-elsewhere"
# Generous: each receive comes back later (1 s, doubling every 4 receives, up to ~7 s by the 12th).
WAIT_BOUND_SECONDS = 600


def _slot_takes(chaos, tenant: str) -> int:
    """Writes to the tenant's running-slots item that reached the store through the fault proxy."""
    entries = requests.get(f"{chaos.proxy_url}/_faults/requests", params={"pk": keys.running_key(tenant)}, timeout=5)
    return sum(1 for entry in entries.json() if entry["operation"] == "UpdateItem")


def test_a_job_waiting_for_its_running_slot_past_the_receive_budget_then_succeeds(deployed, chaos):
    deployed.require_aws()
    redrive = deployed.aws("sqs").get_queue_attributes(QueueUrl=deployed.queue_url(), AttributeNames=["RedrivePolicy"])
    budget = json.loads(redrive["Attributes"]["RedrivePolicy"])["maxReceiveCount"]
    if not os.environ.get("CORRAL_API_URL"):  # the embedded stack: the scaled-down budget is the queue's own
        assert budget == TEST_RECEIVE_BUDGET
    tenant = f"waits{uuid.uuid4().hex[:8]}"
    client = deployed.client(create_api_key(deployed.aws_env, tenant, label="tests"))
    with function_environment(deployed.aws_env):
        quotas.set_limits(tenant, max_running=1)
        now = time.time()
        assert running_slots.take(tenant, HOLDER, 1, running_slots.Cap(1, 1), until=now + 3600, now=now) == 1

    job_id = client.enqueue("echo", {"waited": True})

    def received_past_the_budget() -> int:
        if (status := client.get(job_id)["status"]) != "queued":
            pytest.fail(f"the job is {status} while it waits for its slot")
        takes = _slot_takes(chaos, tenant)
        assert takes >= budget + 2, f"received {takes} times"  # more receives than a message may have
        return takes

    try:
        eventually(
            received_past_the_budget,
            timeout=WAIT_BOUND_SECONDS,
            interval=2,
            message=f"more receives than the budget of {budget}",
        )
    finally:
        with function_environment(deployed.aws_env):
            running_slots.give_back(tenant, HOLDER, 1)

    job = client.wait(job_id, timeout=120)

    assert (job["status"], job["attempts"], job["result"]) == ("succeeded", 1, {"waited": True})
    assert dlq_bodies(deployed, job_id, timeout=3) == []
