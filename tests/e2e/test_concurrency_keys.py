"""Concurrency keys on the embedded stack: at most `limit` of a tenant's jobs with one key run at once,
judged from the jobs' own started/finished times, and the others wait without using an attempt
(docs/decisions/concurrency-keys.md)."""

from __future__ import annotations

import uuid

JOBS = 12
LIMIT = 3
SLEEP_SECONDS = 1
IDEAL_SECONDS = JOBS / LIMIT * SLEEP_SECONDS  # 4 s: four waves of three
# The bound: ~1.5x the ideal, counted from the first job's start, so the cold start of the
# environment that received the set (if any) is not counted.
WITHIN_SECONDS = 1.5 * IDEAL_SECONDS


def _most_at_once(intervals: list[tuple[float, float]]) -> int:
    # An end and a start at the same instant do not overlap: ends sort first.
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, change in edges:
        running += change
        most = max(most, running)
    return most


def test_twelve_one_second_jobs_of_one_key_run_three_at_a_time(api):
    api.wait(api.enqueue("echo", {"warm": True}), timeout=60)
    key = f"partner-{uuid.uuid4().hex[:8]}"  # a pool of its own, whatever earlier runs left behind
    # timeout_seconds: a 1 s job asks for 3, so a job that waits in its batch for a slot may still start
    # there within the local worker's 10 s invocation (it must have its timeout + 1 s left to start).
    body = {
        "type": "sleep",
        "payload": {"seconds": SLEEP_SECONDS},
        "timeout_seconds": 3,
        "concurrency": {"key": key, "limit": LIMIT},
    }
    outcomes = api.enqueue_many([body] * JOBS)

    jobs = [api.wait(outcome.id, timeout=120) for outcome in outcomes]

    assert [job["status"] for job in jobs] == ["succeeded"] * JOBS
    assert [job["attempts"] for job in jobs] == [1] * JOBS  # waiting used no attempt
    assert {job["concurrency"]["key"] for job in jobs} == {key}
    intervals = [(job["started_at"], job["finished_at"]) for job in jobs]
    assert _most_at_once(intervals) <= LIMIT, sorted(intervals)
    span = max(end for _, end in intervals) - min(start for start, _ in intervals)
    waits = sorted(round(job["started_at"] - job["enqueued_at"], 2) for job in jobs)
    assert span <= WITHIN_SECONDS, f"first start to last finish {span:.2f} s; waits to start {waits}"
