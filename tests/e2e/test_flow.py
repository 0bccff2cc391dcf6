"""Flow control on the embedded stack (docs/guides/flow-control.md): unique jobs answer `duplicate` while the
first job with the key waits, and the key is free once it ended; a throttle's jobs start at most `limit` in any window
of `period_seconds`, the rest waiting their turns without using an attempt; a debounce's burst runs once, the last
job's payload, every other job ending `skipped` naming it, and `max_wait_seconds` runs a group under a steady stream."""

from __future__ import annotations

import time
import uuid

import pytest

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


@pytest.mark.parametrize(
    ("limit", "period", "count"),
    [(2, 10, 6), (5, 2, 30)],
    ids=["two per ten seconds, six jobs", "five per two seconds, thirty jobs"],
)
def test_a_throttle_spreads_quick_jobs_over_its_windows_at_most_limit_in_any_window(api, limit, period, count):
    api.wait(api.enqueue("echo", {"warm": True}), timeout=60)
    key = f"partner-{uuid.uuid4().hex[:8]}"  # a start log of its own, whatever earlier runs left behind
    throttle = {"key": key, "limit": limit, "period_seconds": period}
    outcomes = api.enqueue_many([{"type": "echo", "payload": n, "throttle": throttle} for n in range(count)])

    jobs = [api.wait(outcome.id, timeout=180) for outcome in outcomes]

    assert [job["status"] for job in jobs] == ["succeeded"] * count
    assert [job["attempts"] for job in jobs] == [1] * count  # waiting used no attempt
    starts = sorted(job["started_at"] for job in jobs)
    # Any limit + 1 starts span at least the period: no window of it holds more than `limit`.
    spans = [starts[i + limit] - starts[i] for i in range(len(starts) - limit)]
    assert min(spans) >= period, [round(start - starts[0], 2) for start in starts]
    windows = {int((start - starts[0]) // period) for start in starts}
    assert len(windows) >= count // limit, [round(start - starts[0], 2) for start in starts]


def _debounced(key: str, n: int, period: int, max_wait: int | None = None) -> dict:
    debounce = {"key": key, "period_seconds": period} | ({"max_wait_seconds": max_wait} if max_wait else {})
    return {"type": "echo", "payload": {"n": n}, "debounce": debounce}


def test_ten_debounced_jobs_sent_together_run_once_with_the_last_payload_and_nine_end_skipped_naming_it(api):
    key = f"user-{uuid.uuid4().hex[:8]}"
    # Sent one request each, as fast as the API answers (within a second on a quiet machine); the period leaves room
    # for a loaded one: any gap under it keeps the ten one group.
    ids = [api.enqueue_job(_debounced(key, n, period=5))["id"] for n in range(10)]

    jobs = [api.wait(job_id, timeout=120) for job_id in ids]

    assert jobs[-1]["status"] == "succeeded" and jobs[-1]["result"] == {"n": 9}
    assert [job["status"] for job in jobs[:-1]] == ["skipped"] * 9
    assert all(ids[-1] in job["reason"] for job in jobs[:-1]), [job.get("reason") for job in jobs[:-1]]
    assert [job["attempts"] for job in jobs[:-1]] == [0] * 9


def test_max_wait_runs_a_debounced_group_under_a_steady_stream(api):
    key = f"feed-{uuid.uuid4().hex[:8]}"
    ids = []
    for n in range(11):  # one a second for 10 s: never the 3 s lull the period waits for
        ids.append(api.enqueue_job(_debounced(key, n, period=3, max_wait=6))["id"])
        time.sleep(1)
    stream_ended = time.time()

    jobs = [api.wait(job_id, timeout=120) for job_id in ids]

    ran = [job for job in jobs if job["status"] == "succeeded"]
    assert {job["status"] for job in jobs} <= {"succeeded", "skipped"}
    assert jobs[-1]["status"] == "succeeded"
    assert any(job["started_at"] < stream_ended for job in ran), [(j["status"], j.get("started_at")) for j in jobs]
