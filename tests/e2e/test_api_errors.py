"""Auth, tenancy and bad input: clear 4xx answers, never a 5xx or a traceback."""

import pytest

from shared import settings


def test_missing_or_wrong_api_key_is_401(api):
    no_key = api.session.post(api.api_url + "/v1/jobs", json={"type": "echo"}, timeout=10)
    wrong_key = api.request("POST", "/v1/jobs", json={"type": "echo"}, headers={"Authorization": "Bearer ck_nope"})

    for response in (no_key, wrong_key):
        assert response.status_code == 401
        assert response.json()["error"] == "unauthorized"


def test_another_tenants_job_is_404_like_an_unknown_id(api, other_tenant_api):
    job_id = api.enqueue("echo", {"secret": 1})
    api.wait(job_id)

    foreign = other_tenant_api.request("GET", f"/v1/jobs/{job_id}")
    unknown = api.request("GET", "/v1/jobs/" + job_id[:-4] + "aaaa")

    assert foreign.status_code == unknown.status_code == 404
    assert foreign.json().keys() == unknown.json().keys()
    assert foreign.json()["error"] == unknown.json()["error"] == "not_found"


def test_another_tenants_queued_job_is_404_too(api, other_tenant_api):
    job_id = api.enqueue("echo", delay_seconds=60)

    assert other_tenant_api.request("GET", f"/v1/jobs/{job_id}").status_code == 404


def test_malformed_json_is_400(api):
    response = api.request("POST", "/v1/jobs", data="{not json", headers={"content-type": "application/json"})

    assert response.status_code == 400
    assert response.json()["error"] == "malformed_json"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "no-such-type"}, "type"),
        ({"payload": {}}, "type"),
        ({"type": "echo", "max_attempts": 0}, "max_attempts"),
        ({"type": "echo", "max_attempts": settings.MAX_MAX_ATTEMPTS + 1}, "max_attempts"),
        ({"type": "echo", "delay_seconds": -1}, "delay_seconds"),
        ({"type": "echo", "unexpected": 1}, "unexpected"),
    ],
)
def test_invalid_fields_are_422_naming_the_field(api, body, field):
    response = api.request("POST", "/v1/jobs", json=body)

    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_request"
    assert field in response.json()["message"]
    assert field in [problem["field"] for problem in response.json()["fields"]]


def test_a_payload_over_the_limit_is_413(api):
    limit = settings.MAX_PAYLOAD_BYTES  # 64 KiB of serialised JSON
    just_fits = api.request("POST", "/v1/jobs", json={"type": "echo", "payload": "x" * (limit - 2)})
    too_big = api.request("POST", "/v1/jobs", json={"type": "echo", "payload": "x" * (limit - 1)})

    assert just_fits.status_code == 202
    assert too_big.status_code == 413
    assert "payload" in too_big.json()["message"]


def test_unknown_route_is_404_json(api):
    response = api.request("GET", "/v1/nothing-here")

    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_a_known_path_with_another_method_is_405_json_with_allow(api):
    """Through API Gateway: the `Allow` header reaches the client, and nothing is enqueued."""
    response = api.request("DELETE", "/v1/jobs")

    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, POST"
    assert response.json() == {
        "error": "method_not_allowed",
        "message": "DELETE is not allowed on /v1/jobs; allowed: GET, POST",
    }
