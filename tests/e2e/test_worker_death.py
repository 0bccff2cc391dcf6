"""A worker environment that dies costs its batch about one job's timeout plus the margin, on the
embedded stack as on AWS: the worker keeps its messages hidden that long at a time
(shared/worker/run/cover.py `HiddenBatch`), so they come back before the queue's own visibility timeout.

After test_resilience.py on purpose: its poison job kills every environment it lands in until it
is dead, which would take this batch's takeover down a second time.
"""

import time

from shared import profiles
from shared.worker.run import cover
from tests.e2e.helpers import eventually, one_running, outcome_writes

LOCAL = profiles.PROFILES["local"]


def test_a_batch_whose_worker_dies_runs_again_before_the_queues_visibility_timeout(api, chaos):
    # One request, one SendMessageBatch: the three arrive in one batch, claimed together as it begins.
    outcomes = api.enqueue_many([{"type": "sleep", "payload": {"seconds": 2}} for _ in range(3)])
    jobs = [outcome.id for outcome in outcomes]
    eventually(
        lambda: one_running(api, jobs),
        interval=0.1,
        message="one of the batch's jobs to run",
    )
    # The claims made ahead read `running` a moment before the batch's cover is set (the two start
    # together): kill inside the first job, once the cover holds, as a real death would come.
    time.sleep(1.0)

    killed_at = time.time()
    assert chaos.kill_worker(), "no worker process found to kill"
    finished = [api.wait(job_id, timeout=90) for job_id in jobs]

    assert [job["status"] for job in finished] == ["succeeded"] * 3
    assert [outcome_writes(chaos, job_id, "succeeded") for job_id in jobs] == [1, 1, 1]
    # Back once the running job could no longer be running: its timeout (the 5 s ceiling) + the 10 s
    # margin from the batch's start, plus the killed environments' cold start (~17 s after the kill on
    # a quiet machine); the queue's visibility timeout would have held them 35 s.
    covered = LOCAL.job_timeout_ceiling_seconds + cover.MARGIN_SECONDS
    # The jobs the death cut short (attempt 2). On a loaded machine the event source may have split the
    # three over two batches, and a job still waiting on the queue at the kill runs at once, as attempt 1.
    rerun = [job for job in finished if job["attempts"] > 1]
    assert rerun, "the kill cut no job short"
    first_rerun = min(job["started_at"] for job in rerun) - killed_at
    assert covered - 3 < first_rerun < LOCAL.visibility_timeout_seconds - 3
