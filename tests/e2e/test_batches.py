"""Batches on the embedded stack: a batch's counts are exact, its on_complete runs once every job has
ended and its on_success once all succeeded, each exactly once (one record, one attempt, one
`succeeded` write at the store, counted at the fault proxy as the resilience tests count), with a
worker SIGKILLed mid-batch and with a 5 s store blip during it (docs/decisions/batches.md). A finished
batch's cancel answers 409 and changes nothing; a batch key reused for other jobs answers 409 naming it
(docs/decisions/idempotency-keys.md)."""

from __future__ import annotations

import random
import time
import uuid
from typing import Any

import pytest

from client import Conflict
from tests.e2e.helpers import eventually, one_running, outcome_writes

CALLBACKS: dict[str, Any] = {
    "on_complete": {"type": "echo", "payload": {"said": "complete"}},
    "on_success": {"type": "echo", "payload": {"said": "success"}},
}
FAILING = {"type": "fail", "payload": {"times": 5}, "max_attempts": 1}  # dead at its first attempt
BLIP_SECONDS = 5


def _sleeping(seconds: float) -> dict[str, Any]:
    # timeout_seconds: a short job asks for a short timeout, so a killed worker's jobs come back soon.
    return {"type": "sleep", "payload": {"seconds": seconds}, "timeout_seconds": 3}


def _fifty_with_failures(seconds: float) -> list[dict[str, Any]]:
    jobs = [_sleeping(seconds)] * 46 + [FAILING] * 4
    random.Random(24).shuffle(jobs)
    return jobs


def _ran_once(api, chaos, job_id: str) -> dict[str, Any]:
    job = api.wait(job_id, timeout=120)
    assert (job["status"], job["attempts"]) == ("succeeded", 1)
    assert outcome_writes(chaos, job_id, "succeeded") == 1  # one record, written once
    return job


def _called_back(api, batch: dict[str, Any], *callbacks: str) -> dict[str, Any]:
    """The batch once its callbacks have ids: a batch's last count and its callback's due mark are two writes
    (the second may come on the last member's next delivery, if its worker died between them)."""

    def with_ids() -> dict[str, Any] | None:
        found = api.batches.get(batch["id"])
        return found if all(found["callbacks"][name] for name in callbacks) else None

    return eventually(with_ids, timeout=120, message=f"the batch's {', '.join(callbacks)} to be enqueued")


def _completed_with_failures(api, chaos, batch: dict[str, Any]) -> None:
    batch = _called_back(api, batch, "on_complete")
    assert (batch["status"], batch["succeeded"], batch["dead"], batch["cancelled"]) == (
        "completed_with_failures",
        46,
        4,
        0,
    )
    complete = _ran_once(api, chaos, batch["callbacks"]["on_complete"])
    assert complete["result"]["said"] == "complete"
    assert complete["result"]["batch"]["id"] == batch["id"] and complete["result"]["batch"]["dead"] == 4
    assert complete["parent"] == {"kind": "batch", "id": batch["id"], "callback": "on_complete"}
    assert api.batches.get(batch["id"])["callbacks"]["on_success"] is None  # never enqueued, so never ran


def _all_succeeded(api, chaos, batch: dict[str, Any], total: int) -> None:
    batch = _called_back(api, batch, "on_success", "on_complete")
    assert (batch["status"], batch["succeeded"], batch["dead"]) == ("succeeded", total, 0)
    success = _ran_once(api, chaos, batch["callbacks"]["on_success"])
    assert success["result"]["batch"]["succeeded"] == total
    _ran_once(api, chaos, batch["callbacks"]["on_complete"])


def test_a_batch_of_fifty_with_failures_completes_with_failures_and_runs_on_complete_once(api, chaos):
    created = api.batches.create(_fifty_with_failures(0), **CALLBACKS, description="fifty, four fail")
    assert (created["status"], created["total"]) == ("running", 50)

    batch = api.batches.wait(created["id"], timeout=180)

    _completed_with_failures(api, chaos, batch)
    member = api.get(api.batches.jobs(created["id"])[0])
    assert member["batch"] == created["id"]


def test_a_batch_of_twenty_that_all_succeed_runs_on_success_once(api, chaos):
    created = api.batches.create([{"type": "echo", "payload": {"n": n}} for n in range(20)], **CALLBACKS)

    batch = api.batches.wait(created["id"], timeout=180)

    _all_succeeded(api, chaos, batch, 20)
    assert created["id"] in [listed["id"] for listed in api.batches.list(status="succeeded", max_items=50)]


def test_a_batch_with_a_worker_killed_mid_batch_still_counts_exactly_and_calls_back_once(api, chaos):
    created = api.batches.create(_fifty_with_failures(1), **CALLBACKS)
    members = api.batches.jobs(created["id"])
    eventually(lambda: one_running(api, members[:10]), interval=0.1, message="a job of the batch to run")
    time.sleep(0.5)  # inside the running jobs, once their batches' cover is set, as a real death would come

    assert chaos.kill_worker(), "no worker process found to kill"
    batch = api.batches.wait(created["id"], timeout=240)

    _completed_with_failures(api, chaos, batch)


def test_a_batch_through_a_five_second_store_blip_still_counts_exactly_and_calls_back_once(api, chaos):
    created = api.batches.create([_sleeping(1)] * 20, **CALLBACKS)
    members = api.batches.jobs(created["id"])
    eventually(lambda: one_running(api, members[:10]), interval=0.1, message="a job of the batch to run")

    injected_before = sum(n for name, n in chaos.stats()["proxy"].items() if name.endswith(".injected"))
    chaos.blip(seconds=BLIP_SECONDS, service="dynamodb", mode="error")
    time.sleep(BLIP_SECONDS + 0.5)  # the batch's status is read from the store, which answers 503 until then
    batch = api.batches.wait(created["id"], timeout=240)

    injected = sum(n for name, n in chaos.stats()["proxy"].items() if name.endswith(".injected"))
    assert injected > injected_before, "the blip did not hit the store"
    _all_succeeded(api, chaos, batch, 20)


def test_cancelling_a_finished_batch_answers_409_and_it_stays_as_it_ended(api):
    created = api.batches.create([{"type": "echo", "payload": {"n": n}} for n in range(3)])
    api.batches.wait(created["id"], timeout=120)

    for _ in range(3):
        with pytest.raises(Conflict) as refused:
            api.batches.cancel(created["id"])
        assert refused.value.status == 409 and "already finished" in refused.value.message

    batch = api.batches.get(created["id"])
    assert (batch["status"], batch["succeeded"], batch["cancelled"]) == ("succeeded", 3, 0)
    assert "cancelled_at" not in batch


def test_a_batch_key_reused_for_other_jobs_answers_409_naming_it_and_the_first_batch_keeps_its_jobs(api):
    key = f"e2e-{uuid.uuid4().hex}"
    first_jobs = [{"type": "echo", "payload": {"first": 1}}, {"type": "echo", "payload": {"first": 2}}]
    created = api.batches.create(first_jobs, idempotency_key=key)

    with pytest.raises(Conflict) as refused:
        api.batches.create([{"type": "echo", "payload": {"other": n}} for n in range(2)], idempotency_key=key)
    assert (refused.value.status, refused.value.field) == (409, "idempotency_key")

    assert api.batches.create(first_jobs, idempotency_key=key) == created  # the same request: the first answer
    batch = api.batches.wait(created["id"], timeout=120)
    assert (batch["status"], batch["succeeded"]) == ("succeeded", 2)
    results = sorted(api.get(job_id)["result"]["first"] for job_id in api.batches.jobs(created["id"]))
    assert results == [1, 2]  # the first request's jobs ran, as its members
