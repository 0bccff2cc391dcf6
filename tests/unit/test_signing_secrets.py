"""Tenants' signing secrets on moto (creation, rotation, expiry, the worker cache) and the signature
scheme, checked from both ends: the worker's header against the client's verify_signature."""

import random

import pytest

from client.signatures import SignatureVerificationError, compute_signature, verify_signature
from shared import environment, settings
from shared.targets import signing_secrets

DAY = 86_400


@pytest.fixture(autouse=True)
def empty_cache():
    signing_secrets._cache.clear()
    yield
    signing_secrets._cache.clear()


def test_the_first_read_creates_one_current_secret_and_later_reads_return_it(aws):
    first = signing_secrets.active("acme", now=1000.0)

    assert len(first) == 1
    assert first[0].secret.startswith("whsec_")
    assert first[0].expires_at is None
    assert signing_secrets.active("acme", now=2000.0) == first
    assert signing_secrets.active("other", now=2000.0) != first  # per tenant


def test_rotation_adds_a_secret_and_keeps_the_previous_valid_for_24_hours(aws):
    [old] = signing_secrets.active("acme", now=1000.0)

    rotated = signing_secrets.rotate("acme", now=5000.0)

    assert [s.id for s in rotated][1:] == [old.id]
    assert rotated[0].expires_at is None
    assert rotated[1].expires_at == 5000.0 + settings.SIGNING_SECRET_GRACE_SECONDS
    assert [s.id for s in signing_secrets.active("acme", now=5000.0 + DAY - 1)] == [s.id for s in rotated]
    assert [s.id for s in signing_secrets.active("acme", now=5000.0 + DAY + 1)] == [rotated[0].id]


def test_a_second_rotation_does_not_extend_an_expiring_secret_and_the_list_is_bounded(aws):
    signing_secrets.active("acme", now=0.0)
    first_rotation = signing_secrets.rotate("acme", now=100.0)
    second_rotation = signing_secrets.rotate("acme", now=200.0)

    assert second_rotation[2].expires_at == first_rotation[1].expires_at == 100.0 + DAY
    for step in range(10):
        kept = signing_secrets.rotate("acme", now=300.0 + step)
    assert len(kept) == settings.SIGNING_SECRETS_MAX


def test_the_worker_signs_with_every_valid_secret_and_each_verifies(aws):
    signing_secrets.active("acme")
    secrets = [s.secret for s in signing_secrets.rotate("acme")]
    body = b'{"invoice": 42}'

    header = signing_secrets.signature_header(signing_secrets.for_signing("acme"), 1_700_000_000, body)

    assert header.startswith("t=1700000000,v1=") and header.count("v1=") == 2
    for secret in secrets:  # a receiver that knows only the old, or only the new secret, accepts it
        verify_signature({"corral-signature": header}, body, [secret], now=1_700_000_010)


def test_the_worker_cache_picks_a_rotation_up_within_its_bound(aws, monkeypatch):
    signing_secrets.for_signing("acme")
    signing_secrets.rotate("acme")

    assert len(signing_secrets.for_signing("acme")) == 1  # cached
    monkeypatch.setattr(settings, "SIGNING_SECRETS_CACHE_SECONDS", 0)
    assert len(signing_secrets.for_signing("acme")) == 2


def _signed(secret: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {"Corral-Signature": f"t={timestamp},v1={compute_signature(secret, timestamp, body)}"}


def test_verification_refuses_a_wrong_secret_a_changed_body_a_stale_timestamp_and_no_header():
    body = b"hello"
    headers = _signed("whsec_a", 1000, body)

    assert verify_signature(headers, body, "whsec_a", now=1000) == 1000
    for bad_body, secrets, now in ((body, "whsec_b", 1000), (b"hellO", "whsec_a", 1000), (body, "whsec_a", 1301)):
        with pytest.raises(SignatureVerificationError):
            verify_signature(headers, bad_body, secrets, now=now)
    with pytest.raises(SignatureVerificationError, match="no Corral-Signature"):
        verify_signature({}, body, "whsec_a", now=1000)
    with pytest.raises(SignatureVerificationError, match="malformed"):
        verify_signature({"corral-signature": "v1=abc"}, body, "whsec_a", now=1000)
    assert verify_signature(list(headers.items()), body.decode(), ["whsec_x", "whsec_a"], tolerance=10, now=1005)


def test_any_body_signed_by_the_worker_verifies_and_any_flipped_byte_does_not():
    rng = random.Random(10)
    for _ in range(200):
        body = rng.randbytes(rng.randint(0, 300))
        secret = "whsec_" + rng.randbytes(8).hex()
        header = {"Corral-Signature": signing_secrets.signature_header([secret], 1000, body)}
        verify_signature(header, body, secret, now=1000)
        if body:
            index = rng.randrange(len(body))
            tampered = body[:index] + bytes([body[index] ^ 1]) + body[index + 1 :]
            with pytest.raises(SignatureVerificationError):
                verify_signature(header, tampered, secret, now=1000)


@pytest.fixture
def call_api(aws, monkeypatch):
    import json

    from functions.api.handler import handler
    from shared.tenants import tenants
    from tests.events import FakeLambdaContext, http_api_event

    environment.change(http_allow_plain=False)
    environment.change(http_allow_loopback=False)
    api_key = tenants.create_key("acme")

    def call(method, path, body=None):
        response = handler(http_api_event(method, path, body, api_key), FakeLambdaContext())
        return response["statusCode"], json.loads(response["body"])

    return call


def test_the_api_lists_and_rotates_the_tenants_secrets(call_api):
    status, listed = call_api("GET", "/v1/signing-secrets")
    assert status == 200
    [current] = listed["secrets"]
    assert current["secret"].startswith("whsec_") and current["expires_at"] is None

    status, rotated = call_api("POST", "/v1/signing-secrets:rotate")

    assert status == 201
    assert [s["id"] for s in rotated["secrets"]][1:] == [current["id"]]
    assert rotated["secrets"][1]["expires_at"] == pytest.approx(rotated["secrets"][0]["created_at"] + DAY)
    assert call_api("GET", "/v1/signing-secrets")[1] == rotated


def test_the_api_refuses_an_http_job_to_an_unsafe_url_naming_the_field(call_api):
    status, body = call_api("POST", "/v1/jobs", {"type": "http", "payload": {"url": "https://169.254.169.254/"}})

    assert status == 422
    assert body["error"] == "invalid_request"
    assert body["fields"] == [{"field": "payload.url", "message": body["fields"][0]["message"]}]
    assert "link-local" in body["message"]
    status, _ = call_api("POST", "/v1/jobs", {"type": "http", "payload": {"url": "https://hooks.example.com/x"}})
    assert status == 202


def test_the_api_refuses_a_header_name_with_a_trailing_newline_naming_the_field(call_api):
    payload = {"url": "https://hooks.example.com/x", "headers": {"X-A\n": "1"}}

    status, body = call_api("POST", "/v1/jobs", {"type": "http", "payload": payload})

    assert status == 422
    assert body["error"] == "invalid_request"
    assert [field["field"] for field in body["fields"]] == ["payload.headers.X-A\n"]
    assert "not a valid header name" in body["message"]


def test_the_example_receiver_accepts_a_signed_request_and_refuses_a_forged_one():
    import threading
    import time

    import requests

    from examples.receivers.http_receiver import make_server

    server = make_server(0, ["whsec_example"])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/invoices"
    body = b'{"invoice": 42}'
    now = int(time.time())
    try:
        signed = {"Corral-Signature": signing_secrets.signature_header(["whsec_example"], now, body)}
        forged = {"Corral-Signature": signing_secrets.signature_header(["whsec_guess"], now, body)}
        job = {"Corral-Job-Id": "jt-1", "Corral-Attempt": "1"}

        accepted = requests.post(url, data=body, headers=signed | job, timeout=5)
        refused = requests.post(url, data=body, headers=forged | job, timeout=5)

        assert (accepted.status_code, accepted.json()) == (200, {"handled": "jt-1", "attempt": 1})
        assert refused.status_code == 400
    finally:
        server.shutdown()
        server.server_close()
