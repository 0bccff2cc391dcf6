"""Flow control on the embedded stack (docs/guides/flow-control.md): unique jobs answer `duplicate` while the
first job with the key waits, and the key is free once it ended."""

from __future__ import annotations

import uuid

from tests.e2e.helpers import eventually, one_running


def _unique_job(key: str, until: str, **extra: object) -> dict:
    return {"type": "sleep", "payload": {"seconds": 1}, "unique": {"key": key, "until": until}, **extra}


def test_a_unique_key_answers_duplicate_while_the_first_job_waits_and_is_free_after_it_ends(api):
    key = f"report-{uuid.uuid4().hex[:8]}"
    first = api.enqueue_job(_unique_job(key, "started", delay_seconds=3))
    assert first["status"] == "queued"
    again = api.enqueue_job(_unique_job(key, "started"))
    assert again == {"id": first["id"], "status": "duplicate"}
    [outcome] = api.enqueue_many([_unique_job(key, "started")])
    assert (outcome.id, outcome.duplicate) == (first["id"], True)

    assert api.wait(first["id"], timeout=120)["status"] == "succeeded"
    later = api.enqueue_job(_unique_job(key, "started"))
    assert later["status"] == "queued" and later["id"] != first["id"]
    assert api.wait(later["id"], timeout=120)["status"] == "succeeded"


def test_until_finished_holds_the_key_while_the_job_runs(api):
    key = f"sync-{uuid.uuid4().hex[:8]}"
    first = api.enqueue_job({**_unique_job(key, "finished"), "payload": {"seconds": 4}, "timeout_seconds": 8})
    eventually(lambda: one_running(api, [first["id"]]), timeout=60, interval=0.25, message="the first job to run")
    assert api.enqueue_job(_unique_job(key, "finished")) == {"id": first["id"], "status": "duplicate"}
    assert api.wait(first["id"], timeout=120)["status"] == "succeeded"
    assert api.enqueue_job(_unique_job(key, "finished"))["status"] == "queued"
