"""Priority lanes on the embedded stack (docs/decisions/priorities.md): each level a queue drained by an event
source of its own with its share of the worker's batches; a high job enqueued behind a backlog of low jobs runs
before most of that backlog, and every job of the backlog still runs."""

from __future__ import annotations

from shared import settings
from shared.flow.priority import Priority, split
from tests.e2e.helpers import finished_jobs

# Low jobs of half a second: the low lane runs 2 batches of 10 at once, so the backlog takes several seconds to
# drain while a high job, in a lane of its own, is picked up at once.
BACKLOG = 300
LOW_JOB_SECONDS = 0.5


def test_each_lane_is_drained_by_the_worker_with_its_share_of_its_batches(deployed):
    """The emulator (ministack 1.5.33) honours each mapping's MaximumConcurrency (one poll thread for all mappings,
    each mapping's batches capped at its own: /work/shared/reference/ministack-internals.md §2), as AWS does."""
    if not deployed.emulated:
        return
    lambda_ = deployed.aws("lambda")
    mappings = lambda_.list_event_source_mappings(FunctionName=settings.WORKER_FUNCTION)["EventSourceMappings"]
    by_queue = {m["EventSourceArn"].rsplit(":", 1)[-1]: m for m in mappings}
    shares = split(settings.WORKER_MAX_CONCURRENCY)
    for level in Priority:
        mapping = by_queue[level.queue_name(settings.names())]
        assert mapping["State"] == "Enabled"
        assert (mapping.get("ScalingConfig") or {}).get("MaximumConcurrency") == shares.of(level)


def test_a_high_job_behind_a_backlog_of_low_jobs_runs_before_most_of_it_and_the_backlog_all_runs(api):
    api.wait(api.enqueue("echo", {"warm": True}, priority="high"), timeout=60)
    backlog = api.enqueue_many(
        [{"type": "sleep", "payload": {"seconds": LOW_JOB_SECONDS, "n": n}, "priority": "low"} for n in range(BACKLOG)]
    )
    assert all(outcome.id for outcome in backlog)

    high = api.wait(api.enqueue("echo", {"lane": "high"}, priority="high"), timeout=60)

    assert high["status"] == "succeeded" and high["priority"] == "high"
    low = finished_jobs(api, [outcome.id for outcome in backlog], timeout=240)
    assert {job["status"] for job in low.values()} == {"succeeded"}  # a lane loses nothing
    assert {job.get("priority") for job in low.values()} == {"low"}
    ran_before = sum(1 for job in low.values() if job["started_at"] < high["started_at"])
    assert ran_before < BACKLOG // 2, f"{ran_before} of the {BACKLOG} low jobs started before the high one"
