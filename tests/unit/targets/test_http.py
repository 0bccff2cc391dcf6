"""The http job type against a real server on 127.0.0.1 (moto for the store and the tenant's secrets):
what is sent and signed, and how each kind of answer ends the attempt."""

import base64
import json
import logging
import socket
import time
from dataclasses import replace
from secrets import token_urlsafe

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook

from client.signatures import SignatureVerificationError, verify_signature
from shared import environment, settings
from shared.errors import InvalidRequest
from shared.jobs.enqueue import check_job
from shared.jobs.job_types import JobContext, JobDead, JobFailed
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.jobs import job_store
from shared.store.tenants import signing_secret_items
from shared.store.tenants.signing_secret_items import SigningSecret
from shared.targets import http as http_jobs
from shared.targets import signing_secrets
from shared.targets.http_policy import AWS_RULES, TargetPolicy
from shared.worker.delivery import Delivery
from tests.receiver import Answer, receiver
from tests.unit.worker_harness import RetryLater, work

LOCAL_RULES = TargetPolicy(allow_plain_http=True, allow_loopback=True)
CONTEXT = JobContext(
    job_id="jt-http-1",
    attempt=2,
    max_attempts=3,
    deadline=float("inf"),
    logger=logging.LoggerAdapter(logging.getLogger("test"), {}),
    tenant="acme",
)


@pytest.fixture(scope="module")
def server():
    with receiver() as running:
        yield running


@pytest.fixture
def local_profile(aws, monkeypatch):
    """The function environment the local profile deploys: loopback and plain http allowed."""
    signing_secrets._cache.clear()
    environment.change(http_allow_plain=True)
    environment.change(http_allow_loopback=True)
    environment.change(http_timeout_seconds=2)
    yield aws
    signing_secrets._cache.clear()


def _call(server, path, **payload):
    return http_jobs.call({"url": server.url(path), **payload}, CONTEXT, LOCAL_RULES)


def test_a_2xx_answer_is_the_result_and_the_request_is_signed_with_the_tenants_secret(server, local_profile):
    path = server.path(Answer(201, b'{"charged": true}', {"Content-Type": "application/json", "Set-Cookie": "s=1"}))

    result = _call(server, path, body={"invoice": 42}, headers={"X-Trace": "abc"})

    assert result == {
        "status": 201,
        "headers": {"content-type": "application/json", "content-length": "17"},
        "body": {"charged": True},
    }
    [request] = server.received(path)
    assert request.method == "POST"
    assert request.body == b'{"invoice":42}'
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-trace"] == "abc"
    assert request.headers["corral-job-id"] == "jt-http-1"
    assert request.headers["corral-attempt"] == "2"
    assert request.headers["host"] == f"127.0.0.1:{server.port}"
    secrets = [s.secret for s in signing_secrets.active("acme")]
    assert verify_signature(request.headers, request.body, secrets, method="POST", url=server.url(path)) <= time.time()
    assert request.headers["webhook-id"] == "jt-http-1"  # the job id: the same on every attempt
    Webhook(secrets[0]).verify(request.body, request.headers, json_parse=False)  # Standard Webhooks' own library


def test_a_tenant_on_a_secret_issued_before_the_standard_form_gets_both_schemes(server, local_profile):
    earlier = "whsec_" + token_urlsafe(32)  # how secrets were issued before the standard form
    signing_secret_items.write("acme", [SigningSecret(id="ss_earlier", secret=earlier, created_at=time.time())], None)
    [shown] = signing_secrets.active("acme")
    path = server.path()

    _call(server, path, body="plain text")

    [request] = server.received(path)
    verify_signature(request.headers, request.body, [earlier], method="POST", url=server.url(path))  # as before
    standard = signing_secrets.public(shown)["standard_webhooks_secret"]
    Webhook(standard).verify(request.body, request.headers, json_parse=False)
    key = base64.urlsafe_b64decode(earlier.removeprefix("whsec_") + "=")  # the 32 bytes the secret encodes
    Webhook(key).verify(request.body, request.headers, json_parse=False)


def test_the_v2_signature_binds_the_url_method_and_job_id_the_worker_called(server, local_profile):
    path = server.path()
    _call(server, path + "?ref=7", method="PUT", body={"refund": 10})
    [request] = server.received(path)
    secrets = [s.secret for s in signing_secrets.active("acme")]
    url = server.url(path) + "?ref=7"

    # The current secret and the next one, which nobody holds yet.
    assert request.headers["corral-signature"].count("v1=") == request.headers["corral-signature"].count("v2=") == 2
    assert verify_signature(request.headers, request.body, secrets, method="PUT", url=url)
    for method, elsewhere in (("PUT", server.url(path)), ("PUT", server.url("/other") + "?ref=7"), ("POST", url)):
        with pytest.raises(SignatureVerificationError):
            verify_signature(request.headers, request.body, secrets, method=method, url=elsewhere)
    with pytest.raises(SignatureVerificationError):
        verify_signature(request.headers | {"corral-job-id": "jt-other"}, request.body, secrets, method="PUT", url=url)


def test_method_query_and_a_string_body_are_sent_as_given(server, local_profile):
    path = server.path(Answer(200, b"plain words", {"Content-Type": "text/plain"}))

    payload = {"url": server.url(path) + "?a=1", "method": "put", "body": "raw text"}

    result = http_jobs.call(payload, CONTEXT, LOCAL_RULES)

    assert result["body"] == "plain words"
    [request] = server.received(path)
    assert (request.method, request.body, request.headers["content-type"]) == (
        "PUT",
        b"raw text",
        "text/plain; charset=utf-8",
    )


def test_a_large_answer_is_cut_at_64_kib_and_marked_truncated(server, local_profile):
    path = server.path(Answer(200, b"x" * (settings.HTTP_RESULT_BODY_MAX_BYTES + 5000), {}))

    result = _call(server, path, method="GET")

    assert result["truncated"] is True
    assert len(result["body"]) == settings.HTTP_RESULT_BODY_MAX_BYTES
    assert server.received(path)[0].body == b""


@pytest.mark.parametrize("status", [408, 425, 429, 500, 502, 503])
def test_transient_statuses_are_retried(server, local_profile, status):
    path = server.path(Answer(status, b"busy, try later", {}))

    with pytest.raises(JobFailed) as failed:
        _call(server, path)

    assert not isinstance(failed.value, JobDead)
    assert failed.value.retry_after is None
    assert f"HTTP {status}" in str(failed.value) and "busy, try later" in str(failed.value)


def test_retry_after_says_when_to_retry_and_is_capped(server, local_profile):
    soon = server.path(Answer(429, b"", {"Retry-After": "7"}))
    far = server.path(Answer(503, b"", {"Retry-After": "86400"}))

    with pytest.raises(JobFailed) as soon_failed:
        _call(server, soon)
    with pytest.raises(JobFailed) as far_failed:
        _call(server, far)

    assert soon_failed.value.retry_after == 7
    assert far_failed.value.retry_after == settings.HTTP_RETRY_AFTER_CAP_SECONDS


def test_retry_after_as_an_http_date():
    assert http_jobs.retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10
    assert http_jobs.retry_after_seconds("soon", now=0) is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 422])
def test_other_4xx_answers_are_permanent(server, local_profile, status):
    path = server.path(Answer(status, b'{"error": "no such customer"}', {}))

    with pytest.raises(JobDead) as failed:
        _call(server, path)

    assert f"HTTP {status}" in str(failed.value) and "no such customer" in str(failed.value)
    assert len(server.received(path)) == 1


def test_a_redirect_is_not_followed(server, local_profile):
    elsewhere = server.path()
    path = server.path(Answer(302, b"", {"Location": server.url(elsewhere)}))

    with pytest.raises(JobDead) as failed:
        _call(server, path)

    assert f"Location: {server.url(elsewhere)}" in str(failed.value)
    assert server.received(elsewhere) == []


def test_a_refused_connection_and_a_slow_endpoint_are_retried(server, local_profile):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    slow = server.path(Answer(200, b"late", {}, delay_seconds=30))  # waited for, the call would succeed

    with pytest.raises(JobFailed) as refused:
        http_jobs.call({"url": f"http://127.0.0.1:{port}/"}, CONTEXT, LOCAL_RULES)
    with pytest.raises(JobFailed) as timed_out:
        _call(server, slow)

    assert not isinstance(refused.value, JobDead) and "NewConnectionError" in str(refused.value)
    assert not isinstance(timed_out.value, JobDead) and "timed out after 2s" in str(timed_out.value)


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/"])
def test_on_the_aws_rules_metadata_and_private_addresses_are_refused_and_dead(local_profile, url):
    with pytest.raises(JobDead) as failed:
        http_jobs.call({"url": url}, CONTEXT, TargetPolicy(allow_plain_http=True))

    assert "refused" in str(failed.value)


def test_on_the_aws_rules_a_name_resolving_to_loopback_is_refused_and_never_contacted(server, local_profile):
    path = server.path()
    before = server.total()

    with pytest.raises(JobDead) as failed:
        http_jobs.call(
            {"url": f"http://hooks.customer.example:{server.port}{path}"},
            CONTEXT,
            # the aws rules, with http and the test server's port allowed
            TargetPolicy(allow_plain_http=True, extra_ports=frozenset({server.port})),
            resolver=lambda host, port: ["127.0.0.1"],
        )

    assert "resolves to a refused address: 127.0.0.1 is a loopback address" in str(failed.value)
    assert server.total() == before


@pytest.mark.parametrize(
    ("payload", "field", "why"),
    [
        ("https://example.com", "payload", "must be an object"),
        ({}, "payload.url", "required"),
        ({"url": "https://10.0.0.1/"}, "payload.url", "private"),
        ({"url": "https://169.254.169.254/"}, "payload.url", "link-local"),
        ({"url": "https://localhost/"}, "payload.url", "loopback"),
        ({"url": "http://example.com/"}, "payload.url", "https"),
        ({"url": "https://example.com", "method": "TRACE"}, "payload.method", "one of"),
        ({"url": "https://a.example", "headers": {"Corral-Job-Id": "x"}}, "payload.headers.Corral-Job-Id", "platform"),
        ({"url": "https://example.com", "headers": {"Host": "evil"}}, "payload.headers.Host", "platform"),
        ({"url": "https://example.com", "headers": {"X-A": "a\r\nB: c"}}, "payload.headers.X-A", "line breaks"),
        ({"url": "https://example.com", "headers": {"X-A": 1}}, "payload.headers.X-A", "string"),
        ({"url": "https://example.com", "headers": {"X-A\n": "a"}}, "payload.headers.X-A\n", "header name"),
        ({"url": "https://example.com", "method": "GET", "body": {"a": 1}}, "payload.body", "no body"),
        ({"url": "https://example.com", "timeout": 3}, "payload.timeout", "unknown field"),
    ],
)
def test_enqueue_names_the_payload_field_at_fault_on_the_aws_rules(aws, monkeypatch, payload, field, why):
    environment.change(http_allow_plain=False)
    environment.change(http_allow_loopback=False)

    with pytest.raises(InvalidRequest, match=why) as invalid:
        check_job(JobSpec("http", payload, 3), tenant="acme")

    assert invalid.value.field == field


# RFC 9110 tchar: the only characters a header name may hold.
_TCHARS = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _header_name_accepted(name: str) -> bool:
    try:
        http_jobs._parse({"url": "https://hooks.example.com/", "headers": {name: "v"}}, AWS_RULES)
    except http_jobs.InvalidPayload as invalid:
        assert invalid.field in (f"payload.headers.{name[:64]}", f"payload.headers.{name}")
        return False
    return True


@given(st.text(min_size=1, max_size=300))
@example("X-A\n")  # `$` with `match` accepted it
def test_a_header_name_is_accepted_exactly_when_it_is_a_token_the_platform_does_not_set(name):
    lowered = name.lower()
    expected = (
        len(name) <= 256
        and all(c in _TCHARS for c in name)
        and lowered not in http_jobs.RESERVED_HEADERS
        and not lowered.startswith(http_jobs.RESERVED_HEADER_PREFIX)
    )

    assert _header_name_accepted(name) is expected


@given(st.text(alphabet=_TCHARS, min_size=1, max_size=64), st.sampled_from(["\n", "\r\n", "\r", "\0", " ", ":"]))
def test_a_token_with_a_line_break_or_separator_after_it_is_refused(token, tail):
    assert not _header_name_accepted(token + tail)


def test_a_valid_http_payload_is_accepted(aws):
    check_job(
        JobSpec("http", {"url": "https://hooks.example.com/a", "method": "DELETE", "headers": {"X-Key": "1"}}, 3),
        tenant="acme",
    )


def _deliver(message):
    return work(message, Delivery(message_id="m1", body=message.to_json()))


def _message(url, max_attempts=3):
    return JobMessage(
        id="jt-http-work", tenant="acme", type="http", payload={"url": url}, max_attempts=max_attempts, enqueued_at=1.0
    )


def test_a_4xx_job_is_dead_after_one_attempt_with_its_message_in_the_dlq(server, local_profile):
    path = server.path(Answer(400, b"bad invoice id", {}))

    assert _deliver(_message(server.url(path))) == "dead"

    record = job_store.get("jt-http-work")
    assert (record.status, record.attempts) == (Status.DEAD, 1)
    assert "HTTP 400" in record.error and "bad invoice id" in record.error
    dead = local_profile["sqs"].receive_message(QueueUrl=local_profile["dlq_url"])["Messages"]
    assert json.loads(dead[0]["Body"])["id"] == "jt-http-work"


def test_a_retry_after_answer_hands_the_message_back_for_that_long(server, local_profile):
    path = server.path(Answer(503, b"", {"Retry-After": "42"}))

    with pytest.raises(RetryLater) as later:
        _deliver(_message(server.url(path)))

    assert later.value.seconds == 42
    record = job_store.get("jt-http-work")
    assert record.status is Status.FAILED


def test_the_registered_job_type_reads_the_stack_rules_from_the_environment(server, local_profile, monkeypatch):
    path = server.path()
    assert _deliver(_message(server.url(path))) == "succeeded"

    environment.change(http_allow_loopback=False)
    message = JobMessage(
        id="jt-http-2", tenant="acme", type="http", payload={"url": server.url(path)}, max_attempts=3, enqueued_at=1.0
    )
    assert _deliver(message) == "dead"
    assert "loopback" in job_store.get("jt-http-2").error
    assert len(server.received(path)) == 1
    assert AWS_RULES.allow_loopback is False


def _certificate_authority(tmp_path, host):
    """A CA and a certificate for `host` signed by it: (server context, client context trusting the CA)."""
    import datetime
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject, key, issuer, issuer_key, *, ca):
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("corral test CA", ca_key, "corral test CA", ca_key, ca=True)
    leaf = certificate(host, leaf_key, "corral test CA", ca_key, ca=False)
    pem = serialization.Encoding.PEM
    (tmp_path / "leaf.pem").write_bytes(leaf.public_bytes(pem))
    (tmp_path / "leaf.key").write_bytes(
        leaf_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(tmp_path / "leaf.pem", tmp_path / "leaf.key")
    client_context = ssl.create_default_context(cadata=ca.public_bytes(pem).decode())
    return server_context, client_context


def test_tls_goes_to_the_checked_address_with_the_name_as_sni_and_the_certificate_checked(
    tmp_path, local_profile, monkeypatch
):
    server_context, client_context = _certificate_authority(tmp_path, "hooks.customer.test")
    monkeypatch.setattr(http_jobs, "_tls_context", lambda: client_context)
    to_loopback = lambda host, port: ["127.0.0.1"]  # noqa: E731
    with receiver(tls=server_context) as server:
        path = server.path(Answer(200, b'{"secure": true}'))
        url = f"https://hooks.customer.test:{server.port}{path}"

        rules = replace(LOCAL_RULES, extra_ports=frozenset({server.port}))  # a name may call allowed ports only
        result = http_jobs.call({"url": url}, CONTEXT, rules, resolver=to_loopback)
        with pytest.raises(JobFailed) as wrong_name:  # the same server, but not the certificate's name
            http_jobs.call(
                {"url": f"https://other.customer.test:{server.port}{path}"}, CONTEXT, rules, resolver=to_loopback
            )

        assert result["body"] == {"secure": True}
        assert server.server_names[0] == "hooks.customer.test"
        assert server.received(path)[0].headers["host"] == f"hooks.customer.test:{server.port}"
        assert not isinstance(wrong_name.value, JobDead) and "SSLError" in str(wrong_name.value)
        assert len(server.received(path)) == 1


def test_a_request_sent_right_after_a_rotation_verifies_with_the_new_secret_alone(server, local_profile):
    signing_secrets.active("acme", now=time.time() - settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS)  # a while ago
    path = server.path()
    _call(server, path)  # the worker reads the tenant's secrets and keeps them for its cache time

    [new, old] = signing_secrets.rotate("acme")
    _call(server, path)  # well within that time

    [before, after] = server.received(path)
    url = server.url(path)
    verify_signature(after.headers, after.body, [new.secret], method="POST", url=url)
    Webhook(signing_secrets.public(new)["standard_webhooks_secret"]).verify(after.body, after.headers, json_parse=False)
    verify_signature(after.headers, after.body, [old.secret], method="POST", url=url)  # the old one, in its grace
    verify_signature(before.headers, before.body, [new.secret], method="POST", url=url)  # it signed before, unseen
