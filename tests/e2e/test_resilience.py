"""Faults injected into the embedded stack (local/chaos.py): a store blip, a killed worker, a poison job.

Nothing is lost and nothing is recorded twice: each job ends with exactly one
successful outcome write reaching the store (counted at the fault proxy).
The local profile's worker keeps each received message hidden for about the running job's
timeout plus 10 s (at most 15 s with its 5 s ceiling; shared/worker/run/cover.py), so a killed attempt
comes back within that, or the queue's 35 s visibility timeout if the worker died before hiding it; the
poison job is enqueued first (module fixture) so its two waits overlap the other tests.

A job that shares a batch with the poison job waits one visibility timeout per crash (the
crash takes the whole invocation down): up to 2 x 30 s here, so waits on jobs enqueued
near it are bounded by POISON_NEIGHBOUR_WAIT rather than the default.
"""

import time
from collections.abc import Iterator

import pytest

from tests.e2e.helpers import dlq_bodies, eventually, one_running, outcome_writes

BLIP_SECONDS = 5
POISON_NEIGHBOUR_WAIT = 2 * 30 + 40  # two crashes' visibility timeouts, plus a slow emulator's margin


@pytest.fixture(scope="module")
def poison_job(api, chaos) -> Iterator[tuple[str, str]]:
    """A job that SIGKILLs its worker on every attempt, and an innocent job enqueued right after it."""
    yield api.enqueue("crash", {"times": 99}, max_attempts=2), api.enqueue("echo", {"innocent": True})


def test_a_store_blip_loses_nothing_and_records_nothing_twice(api, chaos, poison_job):
    cached_job = api.enqueue("echo", {"before": "blip"})
    api.wait(cached_job, timeout=POISON_NEIGHBOUR_WAIT)
    finishing_in_blip = [api.enqueue("sleep", {"seconds": 1}) for _ in range(3)]

    chaos.blip(seconds=BLIP_SECONDS, service="dynamodb", mode="mixed")
    blip_started = time.monotonic()
    enqueued_in_blip, polls_in_blip = [], []
    while time.monotonic() - blip_started < 4:
        enqueued_in_blip.append(api.enqueue("echo", {"during": "blip"}))  # raises on anything but 202
        polls_in_blip.append(api.get(cached_job)["status"])  # a cache hit: answered without the store
        time.sleep(0.2)
    injected = {name: n for name, n in chaos.stats()["proxy"].items() if name.endswith(".injected")}

    jobs = finishing_in_blip + enqueued_in_blip
    # Jobs not yet in the cache are read from the store, which answers 503 until the blip is over:
    # their outcomes are checked after it (what this test asserts is that they are recorded then).
    time.sleep(max(0.0, BLIP_SECONDS + 0.5 - (time.monotonic() - blip_started)))
    finished = [api.wait(job_id, timeout=90) for job_id in jobs]

    assert injected, "the blip did not hit the store"
    assert set(polls_in_blip) == {"succeeded"}
    assert [job["status"] for job in finished] == ["succeeded"] * len(jobs)
    assert [outcome_writes(chaos, job_id, "succeeded") for job_id in jobs] == [1] * len(jobs)


def test_an_sqs_blip_never_loses_an_accepted_job(api, chaos, poison_job):
    chaos.blip(seconds=3, service="sqs", mode="error")
    started, answers = time.monotonic(), []
    while time.monotonic() - started < 4:
        answers.append(api.request("POST", "/v1/jobs", json={"type": "echo", "payload": {"during": "sqs blip"}}))

    # botocore retries the send; if the blip outlasts its retries the API says so (503, retry), never 202.
    assert {answer.status_code for answer in answers} <= {202, 503}
    assert all(answer.json()["error"] == "unavailable" for answer in answers if answer.status_code == 503)
    accepted = [answer.json()["id"] for answer in answers if answer.status_code == 202]
    assert accepted
    assert [api.wait(job_id, timeout=90)["status"] for job_id in accepted] == ["succeeded"] * len(accepted)
    assert chaos.stats()["proxy"].get("sqs.SendMessage.injected", 0) > 0, "the blip did not hit SQS"


def test_a_worker_killed_mid_job_is_taken_over_and_completes_once(api, chaos, poison_job):
    jobs = [api.enqueue("sleep", {"seconds": 2}) for _ in range(2)]
    running = eventually(
        lambda: one_running(api, jobs),
        timeout=20,
        interval=0.1,
        message="one of the jobs to run",
    )

    killed = chaos.kill_worker()

    assert killed, "no worker process found to kill"
    finished = {job_id: api.wait(job_id, timeout=90) for job_id in jobs}  # visibility timeout: 30 s
    assert [job["status"] for job in finished.values()] == ["succeeded", "succeeded"]
    assert finished[running]["attempts"] == 2  # the killed attempt's lease expired and was taken over
    assert [outcome_writes(chaos, job_id, "succeeded") for job_id in jobs] == [1, 1]


def test_a_poison_job_ends_dead_in_the_dlq_without_blocking_others(api, deployed, chaos, poison_job):
    poison, innocent = poison_job

    assert api.wait(innocent, timeout=90)["status"] == "succeeded"
    dead = api.wait(poison, timeout=150)

    assert dead["status"] == "dead"
    assert dead["attempts"] == 2
    assert "ended without an outcome" in dead["error"]
    assert len(dlq_bodies(deployed, poison)) == 1
    assert outcome_writes(chaos, poison, "dead") == 1
