"""A schedule's job with `debounce`, `unique` and `priority` (moto): checked at create and update (422 naming
`job.<option>...`, nothing written), stored in the schedule's record, shown in its view, carried in Scheduler's
Input, and applied at each firing by the worker: a debounced schedule's firings arriving within the period run once,
the last; a unique schedule's firing is skipped while its key's holder holds it. Before these fields existed the
API refused them (extra fields), so every test here fails there."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared import settings as corral_settings
from shared.flow.priority import Priority
from shared.jobs import payloads
from shared.model.states import Status
from shared.schedules import lifecycle, runs
from shared.store.flow import debounce_items, unique_locks
from shared.store.jobs import job_store
from shared.tenants import tenants
from tests.unit.api_harness import answer as _api
from tests.unit.flow.test_debounce_jobs import _Clock, _drain
from tests.unit.worker_harness import dead_letters, send

DEBOUNCE = {"key": "nightly-sync", "period_seconds": 120}
UNIQUE = {"key": "nightly-export", "until": "finished"}


def _body(name: str = "nightly", **job: Any) -> dict[str, Any]:
    return {"name": name, "expression": "rate(1 minute)", "job": {"type": "echo", "payload": {"n": 1}, **job}}


def _input(scheduler_env: dict[str, Any], name: str = "nightly") -> dict[str, Any]:
    entry = scheduler_env["scheduler"].get_schedule(
        Name=lifecycle.scheduler_name("acme", name), GroupName=corral_settings.SCHEDULE_GROUP
    )
    return json.loads(entry["Target"]["Input"])


def _firing(scheduler_env: dict[str, Any], scheduled_for: str, name: str = "nightly") -> str:
    """What Scheduler puts on the queue for the occurrence `scheduled_for`."""
    return json.dumps(_input(scheduler_env, name)).replace("<aws.scheduler.scheduled-time>", scheduled_for)


def _run_id(scheduler_env: dict[str, Any], scheduled_for: str) -> str:
    return next(run["id"] for run in runs.recent("acme", "nightly") if run["scheduled_for"] == scheduled_for)


@pytest.fixture
def key(scheduler_env) -> str:
    return tenants.create_key("acme")


def test_a_schedules_debounce_unique_and_priority_are_stored_shown_and_carried_by_each_firing(scheduler_env, key):
    status, created = _api("POST", "/v1/schedules", key, _body(debounce=DEBOUNCE, unique=UNIQUE, priority="high"))

    assert status == 201
    shown = _api("GET", "/v1/schedules/nightly", key)[1]["job"]
    assert (shown["debounce"], shown["unique"], shown["priority"]) == (DEBOUNCE, UNIQUE, "high")
    assert created["job"] == shown
    firing = _input(scheduler_env)
    assert (firing["debounce"], firing["unique"], firing["priority"]) == (DEBOUNCE, UNIQUE, "high")

    status, changed = _api("PATCH", "/v1/schedules/nightly", key, {"job": {"unique": None, "priority": "low"}})

    assert status == 200 and "unique" not in changed["job"] and changed["job"]["priority"] == "low"
    firing = _input(scheduler_env)
    assert ("unique" in firing, firing["priority"], firing["debounce"]) == (False, "low", DEBOUNCE)


@pytest.mark.parametrize(
    ("job", "field"),
    [
        ({"debounce": {**DEBOUNCE, "period_seconds": 0}}, "job.debounce.period_seconds"),
        ({"debounce": {**DEBOUNCE, "max_wait_seconds": 60}}, "job.debounce.max_wait_seconds"),
        ({"unique": {**UNIQUE, "until": "later"}}, "job.unique.until"),
        ({"unique": {**UNIQUE, "for_seconds": 0}}, "job.unique.for_seconds"),
        ({"priority": "urgent"}, "job.priority"),
        ({"debounce": DEBOUNCE, "unique": {**UNIQUE, "key": DEBOUNCE["key"]}}, "job.unique"),
        ({"debounce": {**DEBOUNCE, "key": "a<aws.scheduler.execution-id>"}}, "job.debounce.key"),
        ({"unique": {**UNIQUE, "key": "<AWS.Scheduler.x>"}}, "job.unique.key"),
    ],
)
def test_a_bad_flow_field_of_a_schedules_job_is_a_422_naming_it_and_nothing_is_written(scheduler_env, key, job, field):
    status, refused = _api("POST", "/v1/schedules", key, _body(**job))

    assert status == 422
    assert field in (refused.get("field"), *(named["field"] for named in refused.get("fields", [])))
    assert _api("GET", "/v1/schedules/nightly", key)[0] == 404
    assert scheduler_env["scheduler"].list_schedules()["Schedules"] == []

    assert _api("POST", "/v1/schedules", key, _body())[0] == 201
    status, refused = _api("PATCH", "/v1/schedules/nightly", key, {"job": job})
    assert status == 422
    assert field in (refused.get("field"), *(named["field"] for named in refused.get("fields", [])))
    assert "debounce" not in _input(scheduler_env) and "unique" not in _input(scheduler_env)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    option=st.sampled_from(["debounce", "unique"]),
    before=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20),
    keyword=st.sampled_from([payloads.SCHEDULER_KEYWORD, payloads.SCHEDULER_KEYWORD.upper(), "<Aws.Scheduler."]),
)
def test_a_key_holding_schedulers_keyword_is_refused_naming_it(scheduler_env, key, option, before, keyword):
    spec = {**(DEBOUNCE if option == "debounce" else UNIQUE), "key": (before + keyword)[:128]}
    status, refused = _api("POST", "/v1/schedules", key, _body(**{option: spec}))

    assert status == 422
    assert f"job.{option}.key" in (refused.get("field"), *(named["field"] for named in refused.get("fields", [])))
    assert scheduler_env["scheduler"].list_schedules()["Schedules"] == []


def test_a_debounced_schedules_firings_within_its_period_run_once_the_last(scheduler_env, key, monkeypatch):
    clock = _Clock(time.time()).install(monkeypatch)
    _api("POST", "/v1/schedules", key, _body(debounce={**DEBOUNCE, "period_seconds": 90}))
    first, second = "2030-01-01T00:00:00Z", "2030-01-01T00:01:00Z"

    send(scheduler_env, _firing(scheduler_env, first))
    _drain(scheduler_env, clock, until=clock.now + 60)  # it waits for its group, unclaimed
    send(scheduler_env, _firing(scheduler_env, second))
    _drain(scheduler_env, clock, until=clock.now + 200)

    ran, superseded = _run_id(scheduler_env, second), _run_id(scheduler_env, first)
    assert job_store.get(ran).status is Status.SUCCEEDED
    skipped = job_store.get(superseded)
    assert (skipped.status, skipped.attempts) == (Status.SKIPPED, 0) and ran in skipped.public()["reason"]
    assert debounce_items.read("acme", DEBOUNCE["key"]).seq == 2  # each firing arrived once, however often it came
    assert dead_letters(scheduler_env) == []


def test_a_unique_schedules_firing_is_skipped_while_its_keys_holder_holds_it(scheduler_env, key, monkeypatch):
    clock = _Clock(time.time()).install(monkeypatch)
    _api("POST", "/v1/schedules", key, _body(unique=UNIQUE))
    holder = _api("POST", "/v1/jobs", key, {"type": "echo", "unique": UNIQUE, "delay_seconds": 30})[1]["id"]

    send(scheduler_env, _firing(scheduler_env, "2030-01-01T00:00:00Z"))
    _drain(scheduler_env, clock, until=clock.now + 5)

    skipped = next(run for run in runs.recent("acme", "nightly") if run["scheduled_for"] == "2030-01-01T00:00:00Z")
    assert skipped["status"] == "skipped" and holder in skipped["reason"]
    _drain(scheduler_env, clock, until=clock.now + 60)  # the holder runs and ends: the key is free
    assert job_store.get(holder).status is Status.SUCCEEDED

    send(scheduler_env, _firing(scheduler_env, "2030-01-01T00:01:00Z"))
    _drain(scheduler_env, clock, until=clock.now + 5)

    ran = _run_id(scheduler_env, "2030-01-01T00:01:00Z")
    assert job_store.get(ran).status is Status.SUCCEEDED
    assert unique_locks.read("acme", UNIQUE["key"]).holder == ran  # the worker took the key for its run
    refused = _api("POST", "/v1/jobs", key, {"type": "echo", "unique": UNIQUE})[1]
    assert refused["status"] == "queued"  # its run ended: the key is free again
    assert dead_letters(scheduler_env) == []


def test_a_backfill_runs_every_occurrence_without_the_schedules_debounce_or_unique_key(scheduler_env, key):
    from datetime import UTC, datetime, timedelta

    _api("POST", "/v1/schedules", key, _body(debounce=DEBOUNCE, unique=UNIQUE, priority="low"))
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    backfilled = runs.backfill("acme", "nightly", end - timedelta(minutes=3), end)

    sent = [
        json.loads(message["Body"])
        for message in scheduler_env["sqs"].receive_message(
            QueueUrl=scheduler_env["lane_urls"][Priority.LOW],
            MaxNumberOfMessages=10,  # the runs' lane
        )["Messages"]
    ]
    assert len(sent) == len(backfilled) == 3
    assert all("debounce" not in body and "unique" not in body and body["priority"] == "low" for body in sent)
