"""Odd input through the deployed API: odd-but-valid jobs all run; hostile bodies get a clear 4xx, never a 5xx."""

import json

import pytest

from shared import settings
from tests.e2e.helpers import finished_jobs


@pytest.fixture(scope="module", autouse=True)
def warm_api(api):
    """The first request may meet a cold API function; on a busy machine that alone can pass a 10 s timeout."""
    api.session.get(api.api_url + "/v1/openapi.json", timeout=120)


def _nested(levels: int, leaf="bottom"):
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


ODD_BUT_VALID = {
    "null": None,
    "false": False,
    "zero": 0,
    "empty string": "",
    "empty object": {},
    "unicode": {"héllo": "wörld ✓ 😀 \u2028 \t \u0000 <script>"},
    "big number": 12345678901234567890123456789,
    "negative zero and tiny floats": [-0.0, 5e-324, 1.7976931348623157e308],
    "large within limits": "x" * (settings.MAX_PAYLOAD_BYTES - 2),  # exactly the limit once serialised
    "exactly max nesting": _nested(settings.MAX_PAYLOAD_DEPTH),
}


def test_odd_but_valid_jobs_all_succeed_with_their_payload_as_result(api):
    no_payload = api.request("POST", "/v1/jobs", json={"type": "echo"})  # no `payload` key at all
    assert no_payload.status_code == 202, no_payload.text
    ids = {"no payload": (no_payload.json()["id"], None)}
    ids |= {name: (api.enqueue("echo", payload), payload) for name, payload in ODD_BUT_VALID.items()}

    finished = finished_jobs(api, [job_id for job_id, _ in ids.values()], timeout=120)
    outcomes = {name: finished[job_id] for name, (job_id, _) in ids.items()}

    assert {name: job["status"] for name, job in outcomes.items()} == dict.fromkeys(ids, "succeeded")
    for name, (_, payload) in ids.items():
        assert outcomes[name]["result"] == payload, name


@pytest.mark.parametrize(
    "headers",
    [{"content-type": "application/x-www-form-urlencoded"}, {"content-type": "text/plain"}, {}],
    ids=["curl -d", "text/plain", "no content type"],
)
def test_a_json_body_runs_whatever_content_type_it_claims(api, headers):
    body = json.dumps({"type": "echo", "payload": {"sent as": headers.get("content-type")}})

    response = api.request("POST", "/v1/jobs", data=body, headers=headers)

    assert response.status_code == 202, response.text
    assert api.wait(response.json()["id"])["result"] == {"sent as": headers.get("content-type")}


def test_without_a_key_a_bad_body_is_401_with_no_details(api):
    response = api.session.post(api.api_url + "/v1/jobs", json={"type": 5, "zzz": 1}, timeout=10)

    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized", "message": response.json()["message"]}


@pytest.mark.parametrize(
    ("raw", "status", "field"),
    [
        ('{"type":"echo","payload":' + "[" * 2000 + "]" * 2000 + "}", 422, "body"),  # was a 500
        ('{"type":"echo","payload":' + json.dumps(_nested(settings.MAX_PAYLOAD_DEPTH + 1)) + "}", 422, "payload"),
        ('{"type":"echo","payload":{"n":NaN}}', 422, "payload.n"),  # was accepted, and came back null
        ('{"type":"echo","payload":[Infinity]}', 422, "payload[0]"),
        ('{"type":"sleep","payload":{"seconds":1e308}}', 422, "payload.seconds"),  # crashed every attempt
        ('{"type":"echo",', 400, None),
    ],
    ids=["2000 deep", "33 deep", "NaN", "Infinity", "sleep 1e308", "malformed"],
)
def test_hostile_bodies_get_a_4xx_naming_the_problem(api, raw, status, field):
    response = api.request("POST", "/v1/jobs", data=raw, headers={"content-type": "application/json"})

    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] in ("invalid_request", "malformed_json")
    if field:
        assert field in (body.get("field"), *[f["field"] for f in body.get("fields", [])]), body


def test_an_error_never_echoes_the_body(api):
    form_like = "type=echo&payload=" + "A" * 70_000  # what `curl -d type=echo...` sends
    unknown_field = json.dumps({"type": "echo", "B" * 70_000: 1})

    for raw in (form_like, unknown_field):
        response = api.request(
            "POST", "/v1/jobs", data=raw, headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert 400 <= response.status_code < 500
        assert len(response.content) < 2_000
        assert "A" * 200 not in response.text and "B" * 200 not in response.text  # a field name is cut to 100


def test_a_batch_body_over_the_request_limit_is_413_not_a_gateway_error(api):
    filler = "x" * (settings.MAX_PAYLOAD_BYTES - 100)  # each job within the payload limit
    jobs = [{"type": "echo", "payload": filler}] * (settings.MAX_REQUEST_BODY_BYTES // len(filler) + 1)

    response = api.request("POST", "/v1/jobs:batch", json={"jobs": jobs})

    assert response.status_code == 413, response.text[:300]
    assert response.json()["error"] == "payload_too_large"
    assert response.json()["field"] == "body"


def test_a_schedule_starting_in_the_past_is_422_not_a_retryable_503(api):
    body = {
        "name": "from-2001",
        "expression": "rate(5 minutes)",
        "job": {"type": "echo"},
        "start": "2001-01-01T00:00:00Z",
    }

    response = api.request("POST", "/v1/schedules", json=body)

    assert response.status_code == 422, response.text
    assert response.json()["fields"][0]["field"] == "start"


def test_scheduler_keywords_in_a_schedules_payload_are_422(api):
    job = {"type": "echo", "payload": {"leak": "<aws.scheduler.schedule-arn>"}}

    response = api.request("POST", "/v1/schedules", json={"name": "kw", "expression": "rate(5 minutes)", "job": job})

    assert response.status_code == 422, response.text
    assert response.json()["fields"][0]["field"] == "job.payload.leak"


def test_a_job_delayed_beyond_the_queues_retention_reports_queued(api):
    job_id = api.enqueue("echo", {"later": True}, delay_seconds=30 * 86_400)

    job = api.get(job_id)

    assert job["status"] == "queued"  # the 15th day is a unit test (tests/unit/api/test_input.py): no time travel here
