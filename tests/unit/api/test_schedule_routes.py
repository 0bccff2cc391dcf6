"""The schedule routes through the API handler in-process on moto: PATCH, :pause, :resume, :trigger and
:backfill answer what the OpenAPI document declares, and a bad field is a 422 naming it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from local.events import FakeLambdaContext, http_api_event
from shared.tenants import tenants

Answer = tuple[int, dict[str, Any]]


@pytest.fixture
def call(scheduler_env):
    from functions.api.handler import handler

    key = tenants.create_key("acme")

    def call(method: str, path: str, body: Any = None) -> Answer:
        path, _, query = path.partition("?")
        event = http_api_event(method, path, body, key)
        if query:
            event["rawQueryString"] = query
            event["queryStringParameters"] = dict(pair.split("=") for pair in query.split("&"))
        response = handler(event, FakeLambdaContext())
        return response["statusCode"], json.loads(response["body"])

    status, created = call(
        "POST",
        "/v1/schedules",
        {"name": "nightly", "expression": "rate(1 minute)", "job": {"type": "echo", "payload": {"n": 1}}},
    )
    assert status == 201, created
    return call


def test_patch_answers_the_changed_schedule(call):
    status, body = call("PATCH", "/v1/schedules/nightly", {"job": {"payload": {"n": 2}}, "overlap": "skip"})
    assert status == 200, body
    assert (body["job"]["payload"], body["job"]["type"], body["overlap"]) == ({"n": 2}, "echo", "skip")
    assert call("GET", "/v1/schedules/nightly")[1]["job"]["payload"] == {"n": 2}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"expression": "rate(30 seconds)"}, "expression"),
        ({"job": {"max_attempts": 99}}, "job.max_attempts"),
        ({"job": {"colour": "red"}}, "job.colour"),
        ({"overlap": "sometimes"}, "overlap"),
        ({"name": "renamed"}, "name"),
        ({"end": "2020-01-01T00:00:00Z"}, "end"),
    ],
)
def test_a_bad_patch_is_422_naming_the_field_and_changes_nothing(call, changes, field):
    before = call("GET", "/v1/schedules/nightly")[1]

    status, body = call("PATCH", "/v1/schedules/nightly", changes)

    assert status == 422, body
    assert field in {problem["field"] for problem in body["fields"]}, body
    assert call("GET", "/v1/schedules/nightly")[1] | {"next_firings": None} == before | {"next_firings": None}


def test_pause_and_resume_answer_the_state(call):
    status, paused = call("POST", "/v1/schedules/nightly:pause", {"note": "incident 42"})
    assert (status, paused["state"], paused["note"]) == (200, "paused", "incident 42")
    shown = call("GET", "/v1/schedules/nightly")[1]
    assert (shown["state"], shown["paused_at"], shown["next_firings"]) == ("paused", paused["paused_at"], [])

    assert call("POST", "/v1/schedules/nightly:pause")[1]["paused_at"] == paused["paused_at"]
    status, resumed = call("POST", "/v1/schedules/nightly:resume")
    assert (status, resumed["state"], resumed["note"]) == (200, "enabled", None)


def test_trigger_answers_202_queued_and_backfill_202_its_runs(call):
    status, triggered = call("POST", "/v1/schedules/nightly:trigger", {"idempotency_key": "k1"})
    assert (status, triggered["status"]) == (202, "queued")
    assert call("POST", "/v1/schedules/nightly:trigger", {"idempotency_key": "k1"})[1]["id"] == triggered["id"]

    end = datetime.now(UTC)
    window = {"start": (end - timedelta(minutes=3)).isoformat(), "end": end.isoformat()}
    status, backfilled = call("POST", "/v1/schedules/nightly:backfill", window)
    assert status == 202 and len(backfilled["runs"]) == 3, backfilled
    assert set(backfilled["runs"][0]) == {"id", "scheduled_for"}


@pytest.mark.parametrize("action", [":pause", ":resume", ":trigger"])
def test_an_unknown_schedule_is_404(call, action):
    status, body = call("POST", f"/v1/schedules/nope{action}")
    assert (status, body["error"]) == (404, "not_found")


def test_the_openapi_document_declares_the_new_routes(call):
    status, document = call("GET", "/v1/openapi.json")
    assert status == 200
    paths = document["paths"]
    assert "patch" in paths["/v1/schedules/{name}"]
    for action, success in ((":pause", "200"), (":resume", "200"), (":trigger", "202"), (":backfill", "202")):
        responses = paths[f"/v1/schedules/{{name}}{action}"]["post"]["responses"]
        assert {success, "404", "422", "429"} <= set(responses), (action, sorted(responses))


def test_a_dry_run_patch_answers_the_next_firings_and_saves_nothing(call):
    before = call("GET", "/v1/schedules/nightly")[1]

    status, previewed = call("PATCH", "/v1/schedules/nightly?dry_run=true", {"expression": "cron(0 9 * * ? *)"})

    assert status == 200, previewed
    assert previewed["expression"] == "cron(0 9 * * ? *)"
    assert len(previewed["next_firings"]) == 5 and all(
        at.endswith("T09:00:00+00:00") for at in previewed["next_firings"]
    )
    assert call("GET", "/v1/schedules/nightly")[1]["expression"] == before["expression"]
    status, refused = call("PATCH", "/v1/schedules/nightly?dry_run=true", {"expression": "cron(0 25 * * ? *)"})
    assert (status, refused["fields"][0]["field"]) == (422, "expression")
