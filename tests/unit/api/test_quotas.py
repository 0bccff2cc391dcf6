"""The API handler in-process on moto: quota refusals (429/403 with the quota and the count), the
schedules listing's cursor, and a schedule's job timeout."""

from __future__ import annotations

import json
from typing import Any

import pytest

from local.events import FakeLambdaContext, http_api_event
from shared import settings
from shared.tenants import quotas, tenants

FAR = settings.MAX_SQS_DELAY_SECONDS + 3600


@pytest.fixture
def call(scheduler_env):
    from functions.api.handler import handler

    key = tenants.create_key("acme")

    def call(method: str, path: str, body: Any = None, query: str = "") -> tuple[int, dict[str, Any], dict]:
        event = http_api_event(method, path, body, key)
        if query:
            event["rawQueryString"] = query
            event["queryStringParameters"] = dict(part.split("=", 1) for part in query.split("&"))
        response = handler(event, FakeLambdaContext())
        return response["statusCode"], json.loads(response["body"]), response.get("headers", {})

    return call


def _schedule(name: str, **job: Any) -> dict[str, Any]:
    return {"name": name, "expression": "rate(1 hour)", "job": {"type": "echo", **job}}


def test_the_schedule_quota_answers_429_naming_quota_and_count(call):
    quotas.set_limits("acme", max_schedules=1)
    assert call("POST", "/v1/schedules", _schedule("a"))[0] == 201

    status, body, headers = call("POST", "/v1/schedules", _schedule("b"))

    assert status == 429
    assert body == {
        "error": "quota_exceeded",
        "message": "schedule quota reached: 1 of 1 (max_schedules)",
        "quota": "max_schedules",
        "limit": 1,
        "count": 1,
    }
    assert "Retry-After" not in headers
    assert call("DELETE", "/v1/schedules/a")[0] == 200
    assert call("POST", "/v1/schedules", _schedule("b"))[0] == 201


def test_a_quota_of_zero_answers_403(call):
    quotas.set_limits("acme", max_far_future_jobs=0)
    status, body, _ = call("POST", "/v1/jobs", {"type": "echo", "delay_seconds": FAR})
    assert (status, body["error"], body["quota"]) == (403, "forbidden", "max_far_future_jobs")


def test_a_batch_past_the_far_future_quota_rejects_those_jobs_alone(call):
    quotas.set_limits("acme", max_far_future_jobs=1)
    jobs = [{"type": "echo", "delay_seconds": FAR}, {"type": "echo", "delay_seconds": FAR}, {"type": "echo"}]

    status, body, _ = call("POST", "/v1/jobs:batch", {"jobs": jobs})

    assert (status, body["accepted"], body["rejected"]) == (207, 2, 1)
    assert body["results"][1] == {
        "index": 1,
        "status": "rejected",
        "error": "quota_exceeded",
        "message": "far-future job quota reached: 1 of 1 (max_far_future_jobs)",
        "quota": "max_far_future_jobs",
    }


def test_schedules_are_listed_with_a_cursor_and_carry_their_job_timeout(call):
    for name in ("c", "a", "b"):
        assert call("POST", "/v1/schedules", _schedule(name, timeout_seconds=7))[0] == 201

    status, first, _ = call("GET", "/v1/schedules", query="limit=2")
    assert status == 200 and [s["name"] for s in first["schedules"]] == ["a", "b"]
    _, second, _ = call("GET", "/v1/schedules", query=f"limit=2&cursor={first['next_cursor']}")
    assert [s["name"] for s in second["schedules"]] == ["c"] and second["next_cursor"] is None
    assert second["schedules"][0]["job"]["timeout_seconds"] == 7

    status, refused, _ = call("GET", "/v1/schedules", query="cursor=bogus")
    assert (status, refused["error"], refused["fields"][0]["field"]) == (422, "invalid_request", "cursor")
    status, refused, _ = call("POST", "/v1/schedules", _schedule("d", timeout_seconds=901))
    assert status == 422 and "timeout_seconds" in refused["message"]
