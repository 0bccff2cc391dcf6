"""Tenants' signing secrets on moto (creation, rotation, expiry, expiring one at once, the worker cache)
and the signature scheme, checked from both ends: the worker's header against the client's
verify_signature (v2 binds the method, URL and job id; v1 only the timestamp and body)."""

import base64
import random
import re
import time
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from client.signatures import (
    SignatureVerificationError,
    canonical_url,
    compute_signature,
    compute_signature_v2,
    verify_signature,
)
from shared import environment, settings
from shared.errors import Conflict, InvalidRequest, NotFound
from shared.targets import http as http_jobs
from shared.targets import signing_secrets
from shared.targets.http_policy import AWS_RULES, TargetPolicy, check_url

DAY = 86_400
URL = "https://hooks.example.com/invoices?ref=7"
ORIGIN = "https://hooks.example.com"
JOB = {"Corral-Job-Id": "jt-1"}
# The local profile's rules, with one extra port an operator allowed (corral:http_ports).
LOCAL_RULES = TargetPolicy(allow_plain_http=True, allow_loopback=True, extra_ports=frozenset({8443}))


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


def test_expiring_a_secret_removes_it_at_once_and_keeps_the_others(aws):
    [old] = signing_secrets.active("acme", now=1000.0)
    new = signing_secrets.rotate("acme", now=2000.0)[0]

    left = signing_secrets.expire("acme", old.id, now=2001.0)

    assert [s.id for s in left] == [new.id]
    assert [s.id for s in signing_secrets.active("acme", now=2001.0)] == [new.id]  # not 24 hours later: now
    assert all(old.secret not in repr(s) for s in signing_secrets.active("acme", now=2001.0))
    with pytest.raises(NotFound):  # gone: a second expire finds nothing
        signing_secrets.expire("acme", old.id, now=2002.0)


def test_the_last_valid_secret_cannot_be_expired_and_another_tenants_id_is_not_found(aws):
    [only] = signing_secrets.active("acme", now=1000.0)
    [others] = signing_secrets.active("other", now=1000.0)
    signing_secrets.rotate("other", now=1000.0)

    with pytest.raises(Conflict, match="only valid signing secret: rotate first"):
        signing_secrets.expire("acme", only.id, now=1001.0)
    with pytest.raises(NotFound):
        signing_secrets.expire("acme", others.id, now=1001.0)
    with pytest.raises(NotFound):
        signing_secrets.expire("nobody-yet", others.id, now=1001.0)
    assert [s.id for s in signing_secrets.active("acme", now=1001.0)] == [only.id]
    assert len(signing_secrets.active("other", now=1001.0)) == 2


def test_a_secret_already_past_its_rotation_grace_is_not_found_and_the_new_one_is_then_the_last(aws):
    [old] = signing_secrets.active("acme", now=0.0)
    [new, _] = signing_secrets.rotate("acme", now=100.0)

    with pytest.raises(NotFound):
        signing_secrets.expire("acme", old.id, now=100.0 + DAY + 1)
    with pytest.raises(Conflict):
        signing_secrets.expire("acme", new.id, now=100.0 + DAY + 1)


def test_the_worker_stops_signing_with_an_expired_secret_within_its_cache_bound(aws, monkeypatch):
    [old] = signing_secrets.active("acme")
    signing_secrets.rotate("acme")
    assert old.secret in signing_secrets.for_signing("acme", ORIGIN)

    signing_secrets.expire("acme", old.id)

    monkeypatch.setattr(settings, "SIGNING_SECRETS_CACHE_SECONDS", 0)
    assert old.secret not in signing_secrets.for_signing("acme", ORIGIN)
    assert len(signing_secrets.for_signing("acme", ORIGIN)) == 2  # the new secret, and the next one


def test_the_worker_signs_with_every_valid_secret_and_each_verifies(aws):
    signing_secrets.active("acme")
    secrets = [s.secret for s in signing_secrets.rotate("acme")]
    body = b'{"invoice": 42}'

    header = signing_secrets.signature_header(
        signing_secrets.for_signing("acme", ORIGIN), 1_700_000_000, body, method="POST", url=URL, job_id="jt-1"
    )

    # The old and the new secret, and the next one (issued by the next rotation, shown to nobody yet).
    assert header.startswith("t=1700000000,v1=") and header.count("v1=") == 3 and header.count("v2=") == 3
    for secret in secrets:  # a receiver that knows only the old, or only the new secret, accepts it
        headers = {"corral-signature": header} | JOB
        verify_signature(headers, body, [secret], method="POST", url=URL, now=1_700_000_010)
        verify_signature(headers, body, [secret], allow_v1=True, now=1_700_000_010)  # a receiver written before v2


def test_a_rotated_secret_signs_at_once_though_the_worker_read_the_list_before_the_rotation(aws):
    signing_secrets.active("acme", now=time.time() - settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS)  # long enough ago
    cached = signing_secrets.for_signing("acme", ORIGIN)  # the worker's copy, kept for its cache time

    [new, old] = signing_secrets.rotate("acme")

    assert signing_secrets.for_signing("acme", ORIGIN) == cached  # still the copy read before
    assert new.secret in cached and old.secret in cached
    assert signing_secrets.public(new)["signs_from"] == new.created_at  # the API says: at once
    shown = {secret.secret for secret in signing_secrets.active("acme")}
    assert shown == {new.secret, old.secret}  # the next secret is shown to nobody
    [third, _, _] = signing_secrets.rotate("acme", now=new.created_at + settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS)
    assert third.secret not in cached  # a second rotation issues the next secret written by the first


def test_a_rotation_soon_after_the_last_says_from_when_every_worker_signs_with_it(aws):
    signing_secrets.active("acme", now=1000.0)
    signing_secrets.rotate("acme", now=2000.0)

    [soon, _, _] = signing_secrets.rotate("acme", now=2010.0)  # its secret was written 10 s ago, at 2000

    assert signing_secrets.public(soon)["signs_from"] == 2000.0 + settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS


def test_a_set_written_without_a_next_secret_gets_one_and_its_first_rotation_says_when_it_signs(aws):
    from shared.store.tenants import signing_secret_items
    from shared.store.tenants.signing_secret_items import SigningSecret

    earlier = SigningSecret(id="ss_earlier", secret="whsec_" + "A" * 43, created_at=100.0)
    signing_secret_items.write("acme", [earlier], None)  # as stored before sets kept a next secret
    [fresh, _] = signing_secrets.rotate("acme", now=1000.0)  # nothing was signing with it
    assert signing_secrets.public(fresh)["signs_from"] == 1000.0 + settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS

    signing_secret_items.write("globex", [replace(earlier, id="ss_g")], None)
    assert [s.id for s in signing_secrets.active("globex", now=1000.0)] == ["ss_g"]  # the read adds a next secret
    [issued, _] = signing_secrets.rotate("globex", now=1000.0 + settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS)
    assert signing_secrets.public(issued)["signs_from"] == issued.created_at  # every worker knew it by then


def _signed(secret: str, timestamp: int, body: bytes, method: str = "POST", url: str = URL) -> dict[str, str]:
    header = signing_secrets.signature_header([secret], timestamp, body, method=method, url=url, job_id="jt-1")
    return {"Corral-Signature": header} | JOB


def test_verification_refuses_a_wrong_secret_a_changed_body_a_stale_timestamp_and_no_header():
    body = b"hello"
    headers = _signed("whsec_a", 1000, body)

    assert verify_signature(headers, body, "whsec_a", method="POST", url=URL, now=1000) == 1000
    for bad_body, secrets, now in ((body, "whsec_b", 1000), (b"hellO", "whsec_a", 1000), (body, "whsec_a", 1301)):
        with pytest.raises(SignatureVerificationError):
            verify_signature(headers, bad_body, secrets, method="POST", url=URL, now=now)
    with pytest.raises(SignatureVerificationError, match="no Corral-Signature"):
        verify_signature({}, body, "whsec_a", method="POST", url=URL, now=1000)
    with pytest.raises(SignatureVerificationError, match="malformed"):
        verify_signature({"corral-signature": "v2=abc"}, body, "whsec_a", method="POST", url=URL, now=1000)
    assert verify_signature(
        list(headers.items()), body.decode(), ["whsec_x", "whsec_a"], tolerance=10, method="post", url=URL, now=1005
    )


def test_v2_changes_with_the_method_the_url_and_the_job_id():
    base = ("whsec_a", "POST", URL, "jt-1", 1000, b"{}")
    signature = compute_signature_v2(*base)
    changed = [
        ("whsec_a", "PUT", URL, "jt-1", 1000, b"{}"),
        ("whsec_a", "POST", "https://hooks.example.com/refunds?ref=7", "jt-1", 1000, b"{}"),
        ("whsec_a", "POST", "https://hooks.example.com/invoices?ref=8", "jt-1", 1000, b"{}"),
        ("whsec_a", "POST", "https://other.example.com/invoices?ref=7", "jt-1", 1000, b"{}"),
        ("whsec_a", "POST", "http://hooks.example.com/invoices?ref=7", "jt-1", 1000, b"{}"),
        ("whsec_a", "POST", URL, "jt-2", 1000, b"{}"),
        ("whsec_a", "POST", URL, "jt-1", 1001, b"{}"),
        ("whsec_a", "POST", URL, "jt-1", 1000, b"[]"),
    ]

    assert len({signature, *(compute_signature_v2(*fields) for fields in changed)}) == len(changed) + 1


def test_a_request_replayed_to_another_url_method_or_job_id_fails_v2_though_its_v1_still_matches():
    body = b'{"refund": 10}'
    captured = _signed("whsec_a", 1000, body)  # signed for POST URL as job jt-1
    replays = [
        (captured, "POST", "https://hooks.example.com/refunds"),
        (captured, "POST", "https://partner.example/notify"),
        (captured, "DELETE", URL),
        (captured | {"Corral-Job-Id": "jt-fresh"}, "POST", URL),
    ]

    for headers, method, url in replays:
        verify_signature(headers, body, "whsec_a", allow_v1=True, now=1000)  # v1 alone cannot tell
        with pytest.raises(SignatureVerificationError, match="no signature matches"):
            verify_signature(headers, body, "whsec_a", method=method, url=url, now=1000)
        with pytest.raises(SignatureVerificationError, match="no signature matches"):  # v2 present: no fallback
            verify_signature(headers, body, "whsec_a", method=method, url=url, allow_v1=True, now=1000)
    without_job_id = {"Corral-Signature": captured["Corral-Signature"]}
    with pytest.raises(SignatureVerificationError, match="no Corral-Job-Id"):
        verify_signature(without_job_id, body, "whsec_a", method="POST", url=URL, now=1000)


def test_a_v1_only_header_is_refused_unless_the_caller_allows_v1():
    body = b"hello"
    v1_only = {"Corral-Signature": f"t=1000,v1={compute_signature('whsec_a', 1000, body)}"} | JOB

    with pytest.raises(SignatureVerificationError, match="no v2 signature"):
        verify_signature(v1_only, body, "whsec_a", method="POST", url=URL, now=1000)
    assert verify_signature(v1_only, body, "whsec_a", method="POST", url=URL, allow_v1=True, now=1000) == 1000
    assert verify_signature(v1_only, body, "whsec_a", allow_v1=True, now=1000) == 1000
    with pytest.raises(TypeError, match="method= and url="):  # a caller that passes neither must choose
        verify_signature(v1_only, body, "whsec_a", now=1000)


def test_the_receiver_may_give_the_url_in_any_equivalent_spelling_of_scheme_host_and_port():
    headers = _signed("whsec_a", 1000, b"", method="GET", url="https://hooks.example.com/a?b=1")

    for url in ("HTTPS://Hooks.Example.COM:443/a?b=1", "https://hooks.example.com./a?b=1#top"):
        verify_signature(headers, b"", "whsec_a", method="GET", url=url, now=1000)
    for url in (
        "https://hooks.example.com:8443/a?b=1",
        "https://hooks.example.com/A?b=1",
        "https://hooks.example.com/a",
    ):
        with pytest.raises(SignatureVerificationError):
            verify_signature(headers, b"", "whsec_a", method="GET", url=url, now=1000)


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/invoices?ref=7",
        "https://Hooks.Example.com:443",
        "https://hooks.example.com.:8443/a/b/?x=1&y=%20z",
        "https://hooks.example.com/p?",
        "https://hooks.example.com/p#fragment",
        "http://127.0.0.1:8000/invoices",
        "http://localhost/",
        "https://[2606:4700:4700::1111]:8443/v6",
        "https://[2606:4700:4700::ABCD]/v6",
    ],
)
def test_the_url_the_worker_signs_is_the_one_the_receiver_rebuilds(url):
    target = check_url(url, LOCAL_RULES)

    signed = http_jobs.signed_url(target)

    assert signed == canonical_url(url)
    assert signed == f"{target.scheme}://{target.host_header}{target.path}"  # scheme, Host header, request target


def test_a_malformed_timestamp_or_too_many_signatures_is_a_verification_error_not_a_crash():
    body = b"x"
    good = compute_signature_v2("whsec_a", "POST", URL, "jt-1", 1000, body)

    with pytest.raises(SignatureVerificationError, match="malformed"):
        verify_signature({"Corral-Signature": f"t=¹⁰⁰⁰,v2={good}"} | JOB, body, "whsec_a", method="POST", url=URL)
    with pytest.raises(SignatureVerificationError):  # compare_digest would raise TypeError on non-ASCII text
        verify_signature({"Corral-Signature": "t=1000,v2=é"} | JOB, body, "whsec_a", method="POST", url=URL, now=1000)
    padded = ",".join(["t=1000", *["v2=" + "0" * 64] * 10, f"v2={good}"])  # only the first 10 are compared
    with pytest.raises(SignatureVerificationError, match="no signature matches"):
        verify_signature({"Corral-Signature": padded} | JOB, body, "whsec_a", method="POST", url=URL, now=1000)
    assert verify_signature(
        {"Corral-Signature": f"t=1000,v2={good}"} | JOB, body, "whsec_a", method="POST", url=URL, now=1000
    )


def test_any_body_signed_by_the_worker_verifies_and_any_flipped_byte_does_not():
    rng = random.Random(10)
    for _ in range(200):
        body = rng.randbytes(rng.randint(0, 300))
        secret = "whsec_" + rng.randbytes(8).hex()
        header = _signed(secret, 1000, body)
        verify_signature(header, body, secret, method="POST", url=URL, now=1000)
        if body:
            index = rng.randrange(len(body))
            tampered = body[:index] + bytes([body[index] ^ 1]) + body[index + 1 :]
            with pytest.raises(SignatureVerificationError):
                verify_signature(header, tampered, secret, method="POST", url=URL, now=1000)


@pytest.fixture
def call_api(aws, monkeypatch):
    import json

    from functions.api.handler import handler
    from local.events import FakeLambdaContext, http_api_event
    from shared.tenants import tenants

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
    assert current["standard_webhooks_secret"] == current["secret"]

    status, rotated = call_api("POST", "/v1/signing-secrets:rotate")

    assert status == 201
    assert [s["id"] for s in rotated["secrets"]][1:] == [current["id"]]
    assert rotated["secrets"][1]["expires_at"] == pytest.approx(rotated["secrets"][0]["created_at"] + DAY)
    assert call_api("GET", "/v1/signing-secrets")[1] == rotated


def test_the_api_expires_a_secret_at_once_and_refuses_the_last_one_with_409(call_api):
    [old] = call_api("GET", "/v1/signing-secrets")[1]["secrets"]
    new = call_api("POST", "/v1/signing-secrets:rotate")[1]["secrets"][0]

    status, left = call_api("POST", f"/v1/signing-secrets/{old['id']}/expire")

    assert status == 200
    assert [s["id"] for s in left["secrets"]] == [new["id"]]
    assert call_api("GET", "/v1/signing-secrets")[1] == left
    status, again = call_api("POST", f"/v1/signing-secrets/{old['id']}/expire")
    assert (status, again["error"]) == (404, "not_found")
    status, last = call_api("POST", f"/v1/signing-secrets/{new['id']}/expire")
    assert (status, last["error"]) == (409, "conflict")
    assert "only valid signing secret" in last["message"] and "rotate first" in last["message"]
    assert call_api("GET", "/v1/signing-secrets")[1] == left


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


def test_the_example_receiver_accepts_a_signed_request_and_refuses_a_forged_a_replayed_or_a_v1_only_one():
    import threading
    import time

    import requests

    from examples.receivers.http_receiver import make_server

    server = make_server(0, ["whsec_example"])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    body = b'{"invoice": 42}'
    now = int(time.time())

    def sign(secret, v2=True):
        bound = {"method": "POST", "url": base + "/invoices", "job_id": "jt-1"} if v2 else {}
        header = signing_secrets.signature_header([secret], now, body, **bound)
        return {"Corral-Signature": header, "Corral-Job-Id": "jt-1", "Corral-Attempt": "1"}

    try:
        signed = sign("whsec_example")
        forged = sign("whsec_guess")
        v1_only = sign("whsec_example", v2=False)

        accepted = requests.post(base + "/invoices", data=body, headers=signed, timeout=5)
        refused = requests.post(base + "/invoices", data=body, headers=forged, timeout=5)
        replayed = requests.post(base + "/refunds", data=body, headers=signed, timeout=5)
        other_id = requests.post(base + "/invoices", data=body, headers=signed | {"Corral-Job-Id": "jt-2"}, timeout=5)
        old_style = requests.post(base + "/invoices", data=body, headers=v1_only, timeout=5)

        assert (accepted.status_code, accepted.json()) == (200, {"handled": "jt-1", "attempt": 1})
        assert [answer.status_code for answer in (refused, replayed, other_id, old_style)] == [400] * 4
        assert "no v2 signature" in old_style.json()["error"]
    finally:
        server.shutdown()
        server.server_close()


# Standard Webhooks ------------------------------------------------------------------------------------


def test_secrets_are_issued_in_the_standard_webhooks_form(aws):
    [secret] = signing_secrets.active("acme")
    key = signing_secrets.standard_key(secret.secret)

    assert secret.secret.startswith("whsec_") and key is not None and len(key) == 32
    assert base64.b64decode(secret.secret.removeprefix("whsec_"), validate=True) == key
    assert signing_secrets.standard_secret(secret.secret) == secret.secret  # one string for both schemes
    assert signing_secrets.public(secret)["standard_webhooks_secret"] == secret.secret


# Issued before the standard form: secrets.token_urlsafe(32), 43 URL-safe characters (here with both - and _).
EARLIER = "whsec_" + "Ab-_" * 10 + "xyz"


def test_a_secret_issued_before_the_standard_form_keys_standard_webhooks_by_the_bytes_it_encodes():
    key = base64.urlsafe_b64decode(EARLIER.removeprefix("whsec_") + "=")
    standard = signing_secrets.standard_secret(EARLIER)
    timestamp = int(time.time())
    body = b'{"invoice":42}'
    headers = {
        "webhook-id": "jt-1",
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signing_secrets.standard_signature([EARLIER], "jt-1", timestamp, body),
        "Corral-Signature": signing_secrets.signature_header(
            [EARLIER], timestamp, body, method="POST", url=URL, job_id="jt-1"
        ),
        **JOB,
    }

    assert len(key) == 32 and signing_secrets.standard_key(EARLIER) == key
    assert standard is not None and standard != EARLIER and base64.b64decode(standard[6:], validate=True) == key
    Webhook(standard).verify(body, headers, json_parse=False)  # the library, given the standard form
    verify_signature(headers, body, [EARLIER], method="POST", url=URL)  # Corral-Signature: the string as before
    with pytest.raises(WebhookVerificationError):  # why the API shows the standard form: the library
        Webhook(EARLIER).verify(body, headers, json_parse=False)  # drops - and _ from the string and misreads it


@pytest.mark.parametrize("text", ["sk_live_abc", "whsec_", "whsec_" + "a" * 42, "whsec_abc$", "whsec_YWJj="])
def test_a_string_corral_never_issued_has_no_standard_key(text):
    assert signing_secrets.standard_key(text) is None and signing_secrets.standard_secret(text) is None
    assert signing_secrets.standard_signature([text], "jt-1", 1_700_000_000, b"{}") is None


def _issued_now(key: bytes) -> str:
    return "whsec_" + base64.b64encode(key).decode()


def _issued_before(key: bytes) -> str:
    return "whsec_" + base64.urlsafe_b64encode(key).decode().rstrip("=")


# A key and the secret string it was issued as: either form, as a tenant mid-rotation may hold both.
secrets_of_either_form = st.one_of(
    st.binary(min_size=24, max_size=64).map(lambda key: (key, _issued_now(key))),
    st.binary(min_size=32, max_size=32).map(lambda key: (key, _issued_before(key))),
)


@given(
    st.binary(max_size=2_000),
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=60),
    st.integers(min_value=-240, max_value=240),
    st.lists(secrets_of_either_form, min_size=1, max_size=3),
)
def test_the_standard_webhooks_library_verifies_every_signature_the_worker_makes(body, job_id, skew, issued):
    secrets_ = [secret for _key, secret in issued]
    timestamp = int(time.time()) + skew  # within the library's 5 minutes
    headers = {
        "webhook-id": job_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signing_secrets.standard_signature(secrets_, job_id, timestamp, body),
    }

    assert headers["webhook-signature"].count("v1,") == len(secrets_)
    for key, secret in issued:  # a receiver on any one of the valid secrets (a rotation) accepts it
        assert signing_secrets.standard_key(secret) == key
        Webhook(signing_secrets.standard_secret(secret)).verify(body, headers, json_parse=False)
        Webhook(key).verify(body, headers, json_parse=False)  # the raw key bytes, as the spec defines them
    with pytest.raises(WebhookVerificationError):
        Webhook(_issued_now(b"another key of 24 bytes!")).verify(body, headers, json_parse=False)
    with pytest.raises(WebhookVerificationError):
        Webhook(key).verify(body + b"!", headers, json_parse=False)
    with pytest.raises(WebhookVerificationError):
        Webhook(key).verify(body, headers | {"webhook-id": job_id + "x"}, json_parse=False)


# Per-destination secrets -------------------------------------------------------------------------------


def test_a_destinations_secrets_alone_sign_its_requests_and_the_unbound_ones_sign_the_rest(aws):
    [unbound] = signing_secrets.active("acme", now=1000.0)
    [own, _] = signing_secrets.rotate("acme", now=2000.0, destination=ORIGIN)

    assert own.destination == ORIGIN
    bound = signing_secrets.for_signing("acme", ORIGIN)
    assert bound[0] == own.secret and unbound.secret not in bound  # and the destination's next secret
    elsewhere = signing_secrets.for_signing("acme", "https://other.example.com")
    assert elsewhere[0] == unbound.secret and not set(elsewhere) & set(bound)
    assert signing_secrets.for_signing("acme", "http://hooks.example.com") == elsewhere  # another origin


def test_a_destinations_rotation_and_expiry_leave_the_other_sets_as_they_were(aws):
    [unbound] = signing_secrets.active("acme", now=1000.0)
    [first, _] = signing_secrets.rotate("acme", now=2000.0, destination=ORIGIN)
    rotated = signing_secrets.rotate("acme", now=3000.0, destination=ORIGIN)

    assert [s.id for s in rotated] == [rotated[0].id, first.id, unbound.id]  # newest first
    assert rotated[1].expires_at == 3000.0 + settings.SIGNING_SECRET_GRACE_SECONDS
    assert rotated[2].expires_at is None  # the unbound set is not rotated by a destination's rotation
    after_unbound_rotation = {s.id: s.expires_at for s in signing_secrets.rotate("acme", now=4000.0)}
    assert after_unbound_rotation[first.id] == 3000.0 + settings.SIGNING_SECRET_GRACE_SECONDS  # untouched
    assert after_unbound_rotation[rotated[0].id] is None
    assert after_unbound_rotation[unbound.id] == 4000.0 + settings.SIGNING_SECRET_GRACE_SECONDS

    signing_secrets.expire("acme", first.id, now=5000.0)
    left = signing_secrets.expire("acme", rotated[0].id, now=5000.0)  # a destination's last may go

    assert all(secret.destination is None for secret in left)
    signing_secrets._cache.clear()
    [current] = [s.secret for s in left if s.expires_at is None]
    assert signing_secrets.for_signing("acme", ORIGIN)[0] == current  # the unbound set's, and its next


def test_destinations_are_bounded_per_tenant(aws, monkeypatch):
    monkeypatch.setattr(settings, "SIGNING_SECRET_DESTINATIONS_MAX", 2)
    for host in ("a", "b"):
        signing_secrets.rotate("acme", destination=f"https://{host}.example.com")
    signing_secrets.rotate("acme", destination="https://a.example.com")  # a known destination rotates

    with pytest.raises(Conflict, match="at most 2 destinations"):
        signing_secrets.rotate("acme", destination="https://c.example.com")


@pytest.mark.parametrize(
    ("given_", "origin"),
    [
        ("https://Hooks.Example.com", "https://hooks.example.com"),
        ("https://hooks.example.com:443/", "https://hooks.example.com"),
        ("https://hooks.example.com:8443", "https://hooks.example.com:8443"),
        ("http://127.0.0.1:9000", "http://127.0.0.1:9000"),
        ("https://[::1]:8443", "https://[::1]:8443"),
    ],
)
def test_a_destination_is_kept_as_its_origin(given_, origin):
    assert signing_secrets.destination_origin(given_, LOCAL_RULES) == origin
    assert check_url(f"{given_.rstrip('/')}/hook?x=1", LOCAL_RULES).origin == origin


@pytest.mark.parametrize(
    "given_",
    [
        "hooks.example.com",
        "ftp://hooks.example.com",
        "https://hooks.example.com/path",
        "https://u:p@hooks.example.com",
        "https://hooks.example.com?x=1",
        "https://",
        "https://hooks.example.com:99999",
    ],
)
def test_a_destination_that_is_not_an_origin_is_refused_naming_the_field(given_):
    with pytest.raises(InvalidRequest) as refused:
        signing_secrets.destination_origin(given_, LOCAL_RULES)
    assert refused.value.field == "destination"


def test_a_plain_http_destination_is_refused_unless_the_stack_calls_plain_http():
    with pytest.raises(InvalidRequest, match="https:// origin") as refused:
        signing_secrets.destination_origin("http://hooks.example.com", AWS_RULES)  # no job could be sent there
    assert refused.value.field == "destination"
    assert signing_secrets.destination_origin("http://hooks.example.com", LOCAL_RULES) == "http://hooks.example.com"


def test_the_api_rotates_a_destinations_secrets_and_refuses_a_bad_destination_with_422(call_api):
    status, rotated = call_api("POST", "/v1/signing-secrets:rotate", {"destination": "https://Hooks.example.com/"})
    assert status == 201
    assert rotated["secrets"][0]["destination"] == ORIGIN
    assert [s["destination"] for s in rotated["secrets"][1:]] == [None]

    status, refused = call_api("POST", "/v1/signing-secrets:rotate", {"destination": "https://hooks.example.com/x"})
    assert status == 422 and refused["fields"][0]["field"] == "destination"
    status, refused = call_api("POST", "/v1/signing-secrets:rotate", {"destination": "http://hooks.example.com"})
    assert status == 422 and refused["fields"][0]["field"] == "destination"  # the aws rules: https only
    status, refused = call_api("POST", "/v1/signing-secrets:rotate", {"destination": 7})
    assert status == 422
    status, listed = call_api("GET", "/v1/signing-secrets")
    assert len(listed["secrets"]) == 2  # nothing changed by the refused ones

    environment.change(http_allow_plain=True)  # a stack whose HTTP jobs may call plain http (the local one)
    status, rotated = call_api("POST", "/v1/signing-secrets:rotate", {"destination": "http://hooks.example.com"})
    assert status == 201 and rotated["secrets"][0]["destination"] == "http://hooks.example.com"


def test_a_destinations_first_secret_says_it_signs_once_every_worker_knows_it(aws):
    cached = signing_secrets.for_signing("acme", ORIGIN)  # a worker that read the list before

    [own, unbound] = signing_secrets.rotate("acme", destination=ORIGIN)  # no worker could know it before

    assert signing_secrets.public(own)["signs_from"] == own.created_at + settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS
    assert signing_secrets.for_signing("acme", ORIGIN) == cached and own.secret not in cached  # until its copy ends
    signing_secrets._cache.clear()  # a worker that read the list after the rotation
    signed = signing_secrets.for_signing("acme", ORIGIN)
    assert signed[0] == own.secret and unbound.secret not in signed


# A destination is read by the parser of HTTP jobs' URLs: an origin some job could call, or 422 ------------

_ORIGIN_SHAPE = re.compile(
    r"https?://(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*"
    r"|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?"
)
_URLISH = st.builds(
    lambda scheme, userinfo, host, port, rest: f"{scheme}{userinfo}{host}{port}{rest}",
    st.sampled_from(["https://"] * 6 + ["http://", "HTTPS://", "ftp://", "https:/", ""]),
    st.sampled_from([""] * 8 + ["u@", "u:p@", "@"]),
    st.one_of(
        st.from_regex(r"[a-z0-9]{1,8}(\.[a-zA-Z0-9_-]{1,8}){0,3}\.?", fullmatch=True),
        st.from_regex(r"[a-zA-Z0-9_.-]{0,20}", fullmatch=True),
        st.text(alphabet="abc. -_%/\\[]:@\u00e9\x00", max_size=12),
        st.sampled_from(["exa mple.com", "a..b.com", "[::1]", "[fe80::1%25eth0]", "127.0.0.1", "[127.0.0.1]"]),
    ),
    st.sampled_from([""] * 6 + [":443", ":8443", ":25", ":0", ":", ":99999", ": 1"]),
    st.sampled_from([""] * 6 + ["/", "/path", "?q=1", "#f", "?", " "]),
)


def _destination_or_refusal(text: str, rules: TargetPolicy) -> str | None:
    try:
        return signing_secrets.destination_origin(text, rules)
    except InvalidRequest as refused:
        assert refused.field == "destination"
        return None


@given(st.one_of(st.text(max_size=60), _URLISH))
@example("https://exa mple.com")
@example("https://a..b.com")
@example("https://hooks.example.com:8443")
def test_any_destination_is_an_origin_a_job_could_call_or_a_refusal_naming_the_field(text):
    for rules in (AWS_RULES, LOCAL_RULES):
        origin = _destination_or_refusal(text, rules)
        if origin is None:
            continue
        assert _ORIGIN_SHAPE.fullmatch(origin), origin
        assert signing_secrets.destination_origin(origin, rules) == origin  # already in its one spelling
        assert check_url(origin + "/hook?x=1", rules).origin == origin  # the origin of the requests it signs


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_URLISH)
@example("https://exa mple.com")
def test_the_api_stores_a_destination_only_as_a_valid_origin_and_answers_422_otherwise(call_api, text):
    status, answer = call_api("POST", "/v1/signing-secrets:rotate", {"destination": text})

    if status == 201:
        stored = answer["secrets"][0]["destination"]
        assert stored == signing_secrets.destination_origin(stored, AWS_RULES)
    elif status == 422:
        assert answer["fields"][0]["field"] == "destination"
    else:
        assert status == 409  # a valid origin past the tenant's bound of destinations
    _, listed = call_api("GET", "/v1/signing-secrets")
    for secret in listed["secrets"]:
        assert secret["destination"] is None or _ORIGIN_SHAPE.fullmatch(secret["destination"])


def test_the_rotate_answer_says_from_when_each_secret_signs(call_api):
    _, listed = call_api("GET", "/v1/signing-secrets")
    [first] = listed["secrets"]
    assert first["signs_from"] == first["created_at"]  # a tenant's first secret signs at once

    status, rotated = call_api("POST", "/v1/signing-secrets:rotate")
    assert status == 201
    [new, old] = rotated["secrets"]
    # Its secret was written with the first one, just now: workers that read the list before may not know it.
    assert new["signs_from"] == pytest.approx(first["created_at"] + settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS)
    assert old["signs_from"] == first["created_at"]
    status, bound = call_api("POST", "/v1/signing-secrets:rotate", {"destination": ORIGIN})
    assert bound["secrets"][0]["signs_from"] > bound["secrets"][0]["created_at"]  # a destination's first secret
