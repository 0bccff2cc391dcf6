"""Overlap "skip": a run of a schedule whose earlier run is still queued, running or waiting to retry is
recorded `skipped` instead of running, whether a trigger or a firing started it (moto; the worker's own
handler for firings)."""

from __future__ import annotations

import json
import time
from typing import Any

from shared import settings
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.schedules import definitions, lifecycle, runs
from shared.store.jobs import job_claims, job_store
from tests.unit.worker_harness import dead_letters, deliver, record


def _create(overlap: str = "skip") -> None:
    request = definitions.ScheduleRequest(
        name="report", expression="rate(1 hour)", job=JobSpec("echo", payload={"n": 1}), overlap=overlap
    )
    lifecycle.create("acme", request)


def _firing(scheduler_env: dict[str, Any], scheduled_for: str) -> str:
    """What Scheduler puts on the queue for the occurrence `scheduled_for`."""
    entry = scheduler_env["scheduler"].get_schedule(
        Name=lifecycle.scheduler_name("acme", "report"), GroupName=settings.SCHEDULE_GROUP
    )
    return entry["Target"]["Input"].replace("<aws.scheduler.scheduled-time>", scheduled_for)


def _start_a_run(scheduler_env: dict[str, Any]) -> str:
    """A manual run, claimed by a worker and still running: the live run the next ones meet."""
    return _claim_a_run(scheduler_env)[0]


def _claim_a_run(scheduler_env: dict[str, Any]) -> tuple[str, str]:
    """As `_start_a_run`: the run's id and its claim's token."""
    triggered = runs.trigger("acme", "report")
    (message,) = scheduler_env["sqs"].receive_message(QueueUrl=scheduler_env["queue_url"])["Messages"]
    claimed = job_claims.claim(JobMessage.from_dict(json.loads(message["Body"])), "m1", time.time(), 300)
    assert isinstance(claimed, job_claims.Claimed)
    return triggered.id, claimed.token


def test_a_trigger_while_a_run_is_running_is_recorded_skipped_with_the_reason(scheduler_env):
    _create()
    running = _start_a_run(scheduler_env)

    skipped = runs.trigger("acme", "report")

    assert skipped.status is Status.SKIPPED and running in skipped.reason
    # Both runs start in the same second here, so the list's order between them is not the point.
    listed = {run["id"]: run for run in runs.recent("acme", "report")}
    newest = listed[skipped.id]
    assert newest == {
        "id": skipped.id,
        "status": "skipped",
        "scheduled_for": newest["scheduled_for"],
        "trigger": "manual",
        "reason": skipped.reason,
    }
    assert (record(skipped.id).attempts, record(running).status) == (0, Status.RUNNING)


def test_a_firing_while_a_run_is_live_is_skipped_by_the_worker_and_acknowledged(scheduler_env):
    _create()
    running = _start_a_run(scheduler_env)

    batch = deliver(scheduler_env, _firing(scheduler_env, "2030-01-01T00:00:00Z"))

    assert batch.failed == []  # acknowledged, not handed back
    firing = runs.recent("acme", "report")[0]
    assert (firing["status"], firing["trigger"], firing["scheduled_for"]) == (
        "skipped",
        "schedule",
        "2030-01-01T00:00:00Z",
    )
    assert running in firing["reason"]
    assert dead_letters(scheduler_env) == []

    again = deliver(scheduler_env, _firing(scheduler_env, "2030-01-01T00:00:00Z"))  # Scheduler delivers it twice
    assert again.failed == [] and record(firing["id"]).status is Status.SKIPPED


def test_a_run_skipped_because_of_a_live_run_keeps_the_next_ones_skipped_while_it_lives(scheduler_env):
    _create()
    running = _start_a_run(scheduler_env)
    for hour in ("01", "02", "03"):  # each firing meets the previous skipped one, which names the live run
        deliver(scheduler_env, _firing(scheduler_env, f"2030-01-01T{hour}:00:00Z"))

    shown = runs.recent("acme", "report")
    assert [run["status"] for run in shown[:3]] == ["skipped"] * 3
    assert all(running in run["reason"] for run in shown[:3])


def test_once_the_live_run_finishes_the_next_firing_runs(scheduler_env):
    _create()
    running, token = _claim_a_run(scheduler_env)
    deliver(scheduler_env, _firing(scheduler_env, "2030-01-01T01:00:00Z"))  # skipped

    assert job_store.complete(running, token, "done", time.time())
    deliver(scheduler_env, _firing(scheduler_env, "2030-01-01T02:00:00Z"))

    assert [run["status"] for run in runs.recent("acme", "report")[:2]] == ["succeeded", "skipped"]


def test_overlap_allow_runs_beside_a_live_run(scheduler_env):
    _create(overlap="allow")
    _start_a_run(scheduler_env)

    assert runs.trigger("acme", "report").status is Status.QUEUED
    deliver(scheduler_env, _firing(scheduler_env, "2030-01-01T00:00:00Z"))
    assert runs.recent("acme", "report")[0]["status"] == "succeeded"


def test_switching_to_skip_takes_effect_at_the_next_firing(scheduler_env):
    _create(overlap="allow")
    running = _start_a_run(scheduler_env)

    lifecycle.update("acme", "report", {"overlap": "skip"})
    deliver(scheduler_env, _firing(scheduler_env, "2030-01-01T00:00:00Z"))

    newest = runs.recent("acme", "report")[0]
    assert newest["status"] == "skipped" and running in newest["reason"]
