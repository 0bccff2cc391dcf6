"""A store blip on the embedded stack: jobs enqueued during it start at once and are recorded once.

While DynamoDB fails (the fault proxy, local/chaos.py), a job's first delivery runs without the
store's claim and its outcome is recorded by a later delivery of an outcome message
(docs/decisions/store-blips.md). Counted at the fault proxy: each job
gets exactly one outcome write that reaches the store, and its record's started_at is the run's.
"""

import time

from tests.e2e.helpers import outcome_writes

BLIP_SECONDS = 5
# Enqueue-to-run of a job enqueued during the blip: its run starts without waiting for the store.
# Generous for a shared 2-core machine; the benchmark measures the real figure.
START_WITHIN_SECONDS = 1.5


def test_jobs_enqueued_during_a_store_blip_start_at_once_and_are_recorded_once(api, chaos):
    api.wait(api.enqueue("echo", {"warm": True}), timeout=60)  # a worker is up and has its id secret
    chaos.blip(seconds=BLIP_SECONDS, service="dynamodb", mode="error")
    blip_started = time.monotonic()
    enqueued = []
    while time.monotonic() - blip_started < BLIP_SECONDS - 1:
        enqueued.append(api.enqueue("echo", {"during": "blip"}))
        time.sleep(0.25)
    injected = {name: n for name, n in chaos.stats()["proxy"].items() if name.endswith(".injected")}
    time.sleep(max(0.0, BLIP_SECONDS + 0.5 - (time.monotonic() - blip_started)))

    finished = [api.wait(job_id, timeout=60) for job_id in enqueued]

    assert injected, "the blip did not hit the store"
    assert [job["status"] for job in finished] == ["succeeded"] * len(enqueued)
    assert [job["attempts"] for job in finished] == [1] * len(enqueued)
    waits = sorted(job["started_at"] - job["enqueued_at"] for job in finished)
    assert waits[-1] <= START_WITHIN_SECONDS, f"enqueue-to-run during the blip: {waits}"
    assert [outcome_writes(chaos, job_id, "succeeded") for job_id in enqueued] == [1] * len(enqueued)
