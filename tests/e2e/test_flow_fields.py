"""Flow-control fields where the contract says they work, on the embedded stack: a batch's debounced members (each
superseded one ends `skipped` naming the member that ran; the batch completes, counting them, and runs its
callback), and a schedule's unique key (a firing while the key's holder waits is recorded `skipped`, naming it)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from client import Corral
from tests.e2e.helpers import eventually


def _get(api: Corral, path: str) -> dict[str, Any]:
    response = api.request("GET", path)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_batchs_debounced_members_end_skipped_naming_the_last_and_the_batch_completes_counting_them(api):
    key = f"user-{uuid.uuid4().hex[:8]}"
    debounced = [{"type": "echo", "payload": {"n": n}, "debounce": {"key": key, "period_seconds": 3}} for n in range(3)]
    body = {"jobs": [*debounced, {"type": "echo"}], "on_complete": {"type": "echo", "payload": {}}}
    response = api.request("POST", "/v1/batches", json=body)
    assert response.status_code == 201, response.text
    batch_id = response.json()["id"]

    def finished() -> dict[str, Any]:
        shown = _get(api, f"/v1/batches/{batch_id}")
        assert shown["status"] != "running" and shown["callbacks"]["on_complete"], shown
        return shown

    shown = eventually(finished, timeout=90, interval=1, message=f"batch {batch_id} to complete")

    assert (shown["status"], shown["succeeded"], shown["skipped"], shown["pending"]) == ("succeeded", 2, 2, 0)
    members = _get(api, f"/v1/batches/{batch_id}/jobs")["jobs"]
    jobs = [api.wait(job_id, timeout=30) for job_id in members]
    assert [job["status"] for job in jobs] == ["skipped", "skipped", "succeeded", "succeeded"]
    assert all(members[2] in job["reason"] for job in jobs[:2]) and jobs[2]["result"] == {"n": 2}
    assert api.wait(shown["callbacks"]["on_complete"], timeout=30)["status"] == "succeeded"


def test_a_unique_schedules_firing_while_its_keys_holder_waits_is_skipped_naming_it(api):
    key = f"export-{uuid.uuid4().hex[:8]}"
    unique = {"key": key, "until": "started"}
    holder = api.enqueue_job({"type": "echo", "unique": unique, "delay_seconds": 600})["id"]  # queued: it holds it
    name = f"unique-{uuid.uuid4().hex[:8]}"
    at = (datetime.now(UTC) + timedelta(seconds=15)).strftime("%Y-%m-%dT%H:%M:%S")
    body = {"name": name, "expression": f"at({at})", "job": {"type": "echo", "unique": unique}}
    response = api.request("POST", "/v1/schedules", json=body)
    assert response.status_code == 201, response.text
    assert response.json()["job"]["unique"] == unique
    try:

        def skipped_run() -> dict[str, Any]:
            runs = _get(api, f"/v1/schedules/{name}")["runs"]
            assert runs and runs[0]["status"] == "skipped", runs
            return runs[0]

        run = eventually(skipped_run, timeout=70, interval=1, message=f"the firing of {name}")
        assert holder in run["reason"] and run["trigger"] == "schedule"
        assert api.get(run["id"])["status"] == "skipped"
    finally:
        api.request("DELETE", f"/v1/schedules/{name}")
        api.request("POST", f"/v1/jobs/{holder}/cancel")
