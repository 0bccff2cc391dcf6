"""The trigger routes through the API handler in-process on moto: create, list, get and delete answer what the
OpenAPI document declares, a name taken is 409, a bad field is a 4xx naming it and creates nothing, and another
tenant's key sees none of them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from local.events import FakeLambdaContext, http_api_event
from shared.tenants import quotas, tenants

Answer = tuple[int, dict[str, Any]]
_TRIGGER = {"name": "on-paid", "event": "payment.received", "match": {"plan": "pro"}, "job": {"type": "echo"}}


@pytest.fixture
def call(aws):
    from functions.api.handler import handler

    keys = {"acme": tenants.create_key("acme"), "globex": tenants.create_key("globex")}

    def call(method: str, path: str, body: Any = None, tenant: str = "acme") -> Answer:
        path, _, query = path.partition("?")
        event = http_api_event(method, path, body, keys[tenant])
        if query:
            event["rawQueryString"] = query
            event["queryStringParameters"] = dict(pair.split("=") for pair in query.split("&"))
        response = handler(event, FakeLambdaContext())
        return response["statusCode"], json.loads(response["body"])

    return call


def test_a_trigger_is_created_read_listed_and_deleted(call):
    status, created = call("POST", "/v1/triggers", _TRIGGER | {"job": {"type": "echo", "payload": {"n": 1}}})
    assert status == 201, created
    assert {name: created[name] for name in ("name", "event", "match")} == {
        "name": "on-paid",
        "event": "payment.received",
        "match": {"plan": "pro"},
    }
    assert created["job"] == {"type": "echo", "payload": {"n": 1}}

    assert call("GET", "/v1/triggers/on-paid") == (200, created)
    assert call("GET", "/v1/triggers") == (200, {"triggers": [created], "next_cursor": None})
    assert call("DELETE", "/v1/triggers/on-paid") == (200, {"name": "on-paid", "deleted": True})
    assert call("GET", "/v1/triggers/on-paid")[0] == 404
    assert call("DELETE", "/v1/triggers/on-paid")[0] == 404


def test_the_same_name_again_is_409_and_the_first_stays(call):
    first = call("POST", "/v1/triggers", _TRIGGER)[1]

    status, body = call("POST", "/v1/triggers", _TRIGGER | {"event": "refund.issued"})

    assert (status, body["error"]) == (409, "conflict"), body
    assert call("GET", "/v1/triggers/on-paid") == (200, first)


def test_the_listing_pages_with_a_cursor(call):
    for name in ("a", "b", "c"):
        call("POST", "/v1/triggers", _TRIGGER | {"name": name})

    status, page = call("GET", "/v1/triggers?limit=2")
    assert status == 200 and [trigger["name"] for trigger in page["triggers"]] == ["a", "b"]
    rest = call("GET", f"/v1/triggers?limit=2&cursor={page['next_cursor']}")[1]
    assert [trigger["name"] for trigger in rest["triggers"]] == ["c"] and rest["next_cursor"] is None


def test_another_tenants_key_sees_and_deletes_none_of_them(call):
    call("POST", "/v1/triggers", _TRIGGER)

    assert call("GET", "/v1/triggers", tenant="globex") == (200, {"triggers": [], "next_cursor": None})
    assert call("GET", "/v1/triggers/on-paid", tenant="globex")[0] == 404
    assert call("DELETE", "/v1/triggers/on-paid", tenant="globex")[0] == 404
    assert call("GET", "/v1/triggers/on-paid")[0] == 200


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "has space"}, "name"),
        ({"name": "n" * 65}, "name"),
        ({"event": "e" * 257}, "event"),
        ({"event": ""}, "event"),
        ({"match": ["plan"]}, "match"),
        ({"match": "pro"}, "match"),
        ({"job": {"type": "no_such_type"}}, "job.type"),
        ({"job": {"type": "echo", "max_attempts": 0}}, "job.max_attempts"),
        ({"job": {"type": "echo", "delay_seconds": 901}}, "job.delay_seconds"),
        ({"job": {"type": "echo", "idempotency_key": "k"}}, "job.idempotency_key"),
        ({"job": {"type": "echo", "payload": "text"}}, "job.payload"),
        ({"job": {"type": "echo", "colour": "red"}}, "job.colour"),
        ({"job": {"payload": {}}}, "job.type"),
        ({"job": "echo"}, "job"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_field_is_a_4xx_naming_it_and_creates_nothing(call, changes, field):
    status, body = call("POST", "/v1/triggers", _TRIGGER | changes)

    assert 400 <= status < 500 and status != 404, body
    named = {problem["field"] for problem in body.get("fields", [])} | {body.get("field")}
    assert field in named, body
    assert call("GET", "/v1/triggers")[1]["triggers"] == []


def test_max_triggers_answers_429_naming_it(call):
    quotas.set_limits("acme", max_triggers=1)
    call("POST", "/v1/triggers", _TRIGGER)

    status, body = call("POST", "/v1/triggers", _TRIGGER | {"name": "second"})

    assert (status, body["error"], body["quota"]) == (429, "quota_exceeded", "max_triggers"), body
