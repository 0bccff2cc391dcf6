"""HTTP jobs end to end: the worker Lambda calls a real server this test runs on 127.0.0.1 (the local
profile allows loopback and plain http), signs each request with the tenant's secrets from the API,
and ends each job by the answer it gets."""

import uuid

import pytest

from client.signatures import verify_signature
from local.deploy import create_api_key
from tests.receiver import Answer, receiver


@pytest.fixture(scope="module")
def hooks(deployed):
    if not deployed.emulated:
        pytest.skip("the receiver runs on this machine's loopback, which only the local profile may call")
    with receiver() as running:
        yield running


@pytest.fixture(scope="module")
def api(deployed):
    # Patient: a cold API or worker function on a loaded 2-core machine can take more than the client's 10 s.
    return _patient(deployed.client())


def _patient(client):
    client.timeout = 30
    return client


def _secrets(api) -> list[str]:
    response = api.request("GET", "/v1/signing-secrets")
    assert response.status_code == 200, response.text
    return [secret["secret"] for secret in response.json()["secrets"]]


def test_a_signed_request_arrives_and_verifies_with_the_secret_from_the_api(api, hooks):
    path = hooks.path(Answer(200, b'{"received": true}'))

    job_id = api.enqueue("http", {"url": hooks.url(path), "body": {"invoice": 42}, "headers": {"X-Tenant-Ref": "7"}})
    job = api.wait(job_id, timeout=60)

    assert job["status"] == "succeeded", job
    assert job["result"] == {
        "status": 200,
        "headers": {"content-type": "application/json", "content-length": "18"},
        "body": {"received": True},
    }
    [request] = hooks.received(path)
    assert (request.method, request.body, request.headers["x-tenant-ref"]) == ("POST", b'{"invoice":42}', "7")
    assert (request.headers["corral-job-id"], request.headers["corral-attempt"]) == (job_id, "1")
    verify_signature(request.headers, request.body, _secrets(api), method="POST", url=hooks.url(path))
    assert job["payload"]["headers"] == {"X-Tenant-Ref": "[redacted]"}  # sent as given, shown to nobody


def test_after_a_rotation_requests_carry_the_old_and_the_new_signature_each_verifying(deployed, hooks):
    # A tenant of its own, so the job's worker reads its secrets after the rotation (the new secret signs at
    # once anyway when the rotation issues a next secret written over 65 s before: signing-secret-rotation.md).
    tenant_api = _patient(
        deployed.client(create_api_key(deployed.aws_env, f"rotation-{uuid.uuid4().hex[:8]}", "tests"))
    )
    [old] = _secrets(tenant_api)
    rotated = tenant_api.request("POST", "/v1/signing-secrets:rotate")
    assert rotated.status_code == 201, rotated.text
    new = rotated.json()["secrets"][0]["secret"]
    path = hooks.path()

    job = tenant_api.wait(tenant_api.enqueue("http", {"url": hooks.url(path), "body": "plain text"}), timeout=60)

    assert job["status"] == "succeeded", job
    [request] = hooks.received(path)
    # The old, the new, and the next secret, which nobody holds yet.
    assert request.headers["corral-signature"].count("v1=") == request.headers["corral-signature"].count("v2=") == 3
    for secret in (old, new):  # a receiver still on the old secret, and one already on the new, both accept it
        verify_signature(request.headers, request.body, [secret], method="POST", url=hooks.url(path))


def test_a_503_is_retried_and_the_next_200_succeeds(api, hooks):
    path = hooks.path(Answer(503, b"overloaded"), Answer(200, b"done", {}))

    job = api.wait(api.enqueue("http", {"url": hooks.url(path)}, max_attempts=3), timeout=60)

    assert (job["status"], job["attempts"], job["result"]["body"]) == ("succeeded", 2, "done")
    assert [r.headers["corral-attempt"] for r in hooks.received(path)] == ["1", "2"]


def test_a_400_is_dead_after_one_attempt(api, hooks):
    path = hooks.path(Answer(400, b'{"error": "unknown invoice"}'))

    job = api.wait(api.enqueue("http", {"url": hooks.url(path)}, max_attempts=5), timeout=60)

    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert "HTTP 400" in job["error"] and "unknown invoice" in job["error"]
    assert len(hooks.received(path)) == 1


def test_a_redirect_is_dead_and_not_followed(api, hooks):
    elsewhere = hooks.path()
    path = hooks.path(Answer(301, b"", {"Location": hooks.url(elsewhere)}))

    job = api.wait(api.enqueue("http", {"url": hooks.url(path)}, max_attempts=5), timeout=60)

    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert f"Location: {hooks.url(elsewhere)}" in job["error"]
    assert hooks.received(elsewhere) == []


def test_retry_after_is_honoured(api, hooks):
    # The first retry's own backoff is 1.6-2.4 s; the endpoint asks for 5.
    path = hooks.path(Answer(429, b"slow down", {"Retry-After": "5"}), Answer(200))

    job = api.wait(api.enqueue("http", {"url": hooks.url(path)}, max_attempts=3), timeout=60)

    assert (job["status"], job["attempts"]) == ("succeeded", 2)
    first, second = hooks.received(path)
    # Not before the 5 s asked for; the upper bound is loose: the emulator redelivers a message
    # some seconds after its visibility ends (the 503 test's 2 s backoff takes ~10 s there).
    assert 4.5 <= second.at - first.at <= 30, f"retried {second.at - first.at:.1f}s after the 429"


def test_an_unsafe_url_is_refused_at_enqueue(api):
    response = api.request("POST", "/v1/jobs", json={"type": "http", "payload": {"url": "http://169.254.169.254/"}})

    assert response.status_code == 422
    assert response.json()["fields"][0]["field"] == "payload.url"


def test_Lf_a_port_other_than_the_web_ports_is_refused_at_enqueue(api):
    job = {"type": "http", "payload": {"url": "https://smtp.example.com:25/"}}

    response = api.request("POST", "/v1/jobs", json=job)

    assert response.status_code == 422, response.text
    assert response.json()["fields"][0]["field"] == "payload.url"
