"""Running a schedule day to day: update it in place (across its due second), pause and resume it, trigger it
by hand, skip overlapping runs, backfill a window. Through the SDK and the CLI, on the deployed stack.

The two tests that need a rate(1 minute) schedule's due second share one wait: their schedules are created
together (module fixture) and the update test runs first, at its schedule's 59th second. On the embedded
emulator (ministack 1.5.33, corrected to sweep every second) a rate() counts from the schedule's creation,
and a firing's scheduled_for is the minute it was sent (the emulator passes
`<aws.scheduler.scheduled-time>` through verbatim): these tests count runs, not their times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from client import Corral
from tests.e2e.cli_runner import ROOT, run_cli
from tests.e2e.helpers import eventually, every_copy_claimed, outcome_writes, scheduler_fired_past
from tests.e2e.test_examples import _promised_output

TICK_ALLOWANCE = 25  # seconds: the emulator's sweep, the worker, a shared machine
CLOCK_SKEW = 2  # seconds between this machine's clock and the API's
SUFFIX = uuid.uuid4().hex[:8]


def _name(kind: str) -> str:
    return f"ops-{kind}-{SUFFIX}"


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _create(api: Corral, kind: str, expression: str = "rate(1 minute)", **options: Any) -> dict[str, Any]:
    job_type = options.pop("job_type", "echo")
    payload = options.pop("payload", {"from": kind})
    return dict(api.schedules.create(_name(kind), expression, job_type, payload, **options))


def _runs(api: Corral, name: str, trigger: str | None = None) -> list[dict[str, Any]]:
    shown = api.schedules.get(name)["runs"]
    return [run for run in shown if trigger is None or run["trigger"] == trigger]


@dataclass(frozen=True)
class Due:
    """Two rate(1 minute) schedules created together: one to update across its due second, one paused."""

    created_at: float

    @property
    def first_firing(self) -> float:
        return self.created_at + 60


@pytest.fixture(scope="module")
def due(api: Corral, deployed) -> Any:
    api.timeout = 30
    api.wait(api.enqueue("echo", "warm-up"), timeout=300)  # a warm worker: triggers are claimed at once
    created_at = time.time()
    _create(api, "updated", payload={"version": 1})
    _create(api, "paused")
    api.schedules.pause(_name("paused"), note="e2e: must not fire")
    yield Due(created_at)
    for kind in ("updated", "paused", "triggered", "patched", "overlap", "backfill"):
        api.request("DELETE", f"/v1/schedules/{_name(kind)}")


def test_an_update_across_the_due_second_fires_that_occurrence_once(api: Corral, due: Due) -> None:
    name = _name("updated")
    time.sleep(max(0.0, due.first_firing - 0.5 - time.time()))
    began = time.time()
    updated = api.schedules.update(name, job={"payload": {"version": 2}})
    print(f"\nupdate: sent {began - due.first_firing:+.2f}s from the due second, took {time.time() - began:.2f}s")
    assert updated["job"]["payload"] == {"version": 2}

    # One firing per minute: by the due second + the allowance (well before the next minute), exactly one.
    eventually(
        lambda: _runs(api, name, "schedule"),
        timeout=due.first_firing + TICK_ALLOWANCE - time.time(),
        message=f"{name} to fire at its due second",
    )
    scheduler_fired_past(api, time.time(), allowance=TICK_ALLOWANCE)  # a second firing would have run by then
    (run,) = _runs(api, name, "schedule")
    job = api.wait(run["id"], timeout=60)
    assert job["status"] == "succeeded"
    assert job["result"] in ({"version": 1}, {"version": 2}), "the old definition or the new one, nothing else"
    print(f"update: the firing ran with {job['result']}")


def test_a_bad_update_is_refused_naming_the_field_and_changes_nothing(api: Corral) -> None:
    name = _name("updated")
    before = api.schedules.get(name)
    response = api.request("PATCH", f"/v1/schedules/{name}", json={"expression": "cron(0 25 * * ? *)"})
    assert response.status_code == 422, response.text
    assert response.json()["fields"][0]["field"] == "expression"
    after = api.schedules.get(name)
    assert (after["expression"], after["job"], after["updated_at"]) == (
        before["expression"],
        before["job"],
        before["updated_at"],
    )


def test_a_trigger_runs_the_schedules_job_now_as_a_manual_run(api: Corral, deployed) -> None:
    name = _name("triggered")
    _create(api, "triggered", start=_iso(datetime.now(UTC) + timedelta(days=1)))  # never fires by itself

    before = time.time()
    ran = run_cli(deployed, "schedules", "trigger", name, "--json")
    after = time.time()
    assert ran.code == 0, ran.stderr
    triggered = ran.json()
    assert triggered["status"] == "queued"

    job = api.wait(triggered["id"], timeout=60)
    assert (job["status"], job["result"]) == ("succeeded", {"from": "triggered"})
    assert (job["schedule"], job["trigger"]) == (name, "manual")
    # Scheduled for the moment of the trigger (whole seconds; a couple more for the API's clock against ours).
    assert before - CLOCK_SKEW <= datetime.fromisoformat(job["scheduled_for"]).timestamp() <= after + CLOCK_SKEW
    assert [run["id"] for run in _runs(api, name, "manual")] == [triggered["id"]]


def test_a_trigger_after_a_patch_runs_the_new_payload(api: Corral, deployed) -> None:
    name = _name("patched")
    _create(api, "patched", start=_iso(datetime.now(UTC) + timedelta(days=1)), payload={"version": 1})

    ran = run_cli(deployed, "schedules", "update", name, "--payload", '{"version": 2}', "--json")
    assert ran.code == 0, ran.stderr
    assert ran.json()["job"]["payload"] == {"version": 2}

    job = api.wait(api.schedules.trigger(name)["id"], timeout=60)
    assert (job["status"], job["result"]) == ("succeeded", {"version": 2})


def test_overlap_skip_two_triggers_a_second_apart_are_one_run_and_one_skipped(api: Corral) -> None:
    name = _name("overlap")
    _create(
        api,
        "overlap",
        job_type="sleep",
        payload={"seconds": 3},
        overlap="skip",
        start=_iso(datetime.now(UTC) + timedelta(days=1)),
    )

    first = api.schedules.trigger(name)
    time.sleep(1)
    second = api.schedules.trigger(name)
    print(f"\noverlap: first {first['status']}, second {second['status']} {second.get('reason', '')}")

    def settled() -> bool:
        shown = _runs(api, name)
        return len(shown) == 2 and all(run["status"] in ("succeeded", "skipped", "dead") for run in shown)

    eventually(settled, timeout=60, interval=1, message=f"{name}'s two runs to settle")
    statuses = sorted(run["status"] for run in _runs(api, name))
    assert statuses == ["skipped", "succeeded"], _runs(api, name)
    skipped = next(run for run in _runs(api, name) if run["status"] == "skipped")
    assert "still" in skipped["reason"] and skipped["trigger"] == "manual"
    assert api.get(skipped["id"])["attempts"] == 0  # a skip costs no attempt


def test_a_backfill_of_ten_minutes_is_ten_runs_and_a_repeat_none_more(api: Corral, deployed, chaos) -> None:
    name = _name("backfill")
    _create(api, "backfill", start=_iso(datetime.now(UTC) + timedelta(days=1)))  # its own firings: none today
    end = datetime.now(UTC)
    start = end - timedelta(minutes=10)

    first = api.schedules.backfill(name, start.isoformat(), end.isoformat())
    assert len(first) == 10

    def all_ran() -> bool:
        return sum(run["status"] == "succeeded" for run in _runs(api, name, "backfill")) == 10

    eventually(all_ran, timeout=90, interval=1, message=f"{name}'s ten backfilled runs to succeed")

    ran = run_cli(
        deployed, "schedules", "backfill", name, "--start", start.isoformat(), "--end", end.isoformat(), "--json"
    )
    assert ran.code == 0, ran.stderr
    assert ran.json()["runs"] == first  # the same runs, by their occurrences' ids

    for run in first:  # claimed by the first backfill's message, and refused to the repeat's
        every_copy_claimed(chaos, run["id"], 2)
    shown = _runs(api, name)
    assert len(shown) == 10 and {run["trigger"] for run in shown} == {"backfill"}
    assert {api.get(run["id"])["attempts"] for run in shown} == {1}
    assert [outcome_writes(chaos, run["id"], "succeeded") for run in shown] == [1] * 10


def test_a_paused_schedule_does_not_fire_until_resumed(api: Corral, deployed, due: Due) -> None:
    name = _name("paused")
    shown = api.schedules.get(name)
    assert (shown["state"], shown["note"], shown["next_firings"]) == ("paused", "e2e: must not fire", [])

    scheduler_fired_past(api, due.first_firing, allowance=TICK_ALLOWANCE)
    assert _runs(api, name) == [], "a paused schedule fired over its due second"

    ran = run_cli(deployed, "schedules", "resume", name, "--json")
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.stdout)["state"] == "enabled"
    resumed_at = time.time()
    # AWS fires at the next beat of its rate (within a minute); the emulator fires at once, its interval past.
    eventually(
        lambda: _runs(api, name, "schedule"),
        timeout=resumed_at + 60 + TICK_ALLOWANCE - time.time(),
        interval=1,
        message=f"{name} to fire again once resumed",
    )
    print(f"\nresume: fired again {time.time() - resumed_at:.1f}s after resuming")


def test_the_schedule_operations_example_prints_what_it_promises(deployed) -> None:
    # As tests/e2e/test_examples.py runs every example; here so that this file alone covers this one.
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")},
        "CORRAL_API_URL": deployed.api_url,
        "CORRAL_API_KEY": deployed.api_key,
    }
    done = subprocess.run(
        [sys.executable, "-m", "examples.schedule_operations"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == _promised_output("schedule_operations")
