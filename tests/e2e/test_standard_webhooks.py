"""Standard Webhooks on the deployed stack: every attempt of a real HTTP job verifies with the PyPI and
the npm `standardwebhooks` libraries, before, during and after a secret rotation, and a destination's own
secret signs its requests alone.

The rotation runs twice: from a secret issued now (`whsec_<base64>`) and from one issued before the
standard form (`whsec_` + 43 URL-safe characters, put in the tenant's item as the store held them),
which keeps its string for Corral-Signature and gives the libraries its `standard_webhooks_secret`.
Each phase has a tenant of its own whose secrets no worker has cached yet, so what the API says of its
secrets is what the worker signs with (a destination's first secret, and an expired one, otherwise
within SIGNING_SECRETS_CACHE_SECONDS). Every request also carries a signature of its set's next secret,
which nobody holds until a rotation issues it: one `v1,` entry more than the secrets shown.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from client.signatures import verify_signature
from local.deploy import create_api_key, function_environment
from shared.store.tenants import signing_secret_items
from shared.store.tenants.signing_secret_items import SigningSecret
from tests.receiver import Answer, Received, receiver

ROOT = Path(__file__).resolve().parents[2]
NODE_RECEIVER = ROOT / "examples" / "receivers" / "standard_webhooks_receiver.mjs"
# Verifies one recorded request with the npm library: {"secret", "body" (base64 of the raw bytes), "headers"}
# on stdin, exit 0 if valid.
NODE_VERIFY = """
import { Webhook } from "standardwebhooks";
let input = "";
process.stdin.on("data", (d) => (input += d)).on("end", () => {
  const { secret, body, headers } = JSON.parse(input);
  try { new Webhook(secret).verify(Buffer.from(body, "base64"), headers, { jsonParse: false }); process.exit(0); }
  catch (error) { console.error(String(error)); process.exit(1); }
});
"""
# How the first secret of a tenant was issued: now, or before corral signed Standard Webhooks.
FORMS = ("issued-now", "issued-before")

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node (the CDK's)")


@pytest.fixture(scope="module")
def hooks(deployed):
    if not deployed.emulated:
        pytest.skip("the receivers run on this machine's loopback, which only the local profile may call")
    with receiver() as running:
        yield running


def _tenant(deployed, phase: str, form: str = "issued-now") -> Any:
    """A new tenant's client; with "issued-before", its first secret is one of the earlier form."""
    tenant = f"stdhooks-{phase}-{uuid.uuid4().hex[:8]}"
    if form == "issued-before":
        earlier = SigningSecret(
            id="ss_" + secrets.token_hex(6), secret="whsec_" + secrets.token_urlsafe(32), created_at=time.time()
        )
        with function_environment(deployed.aws_env):
            assert signing_secret_items.write(tenant, [earlier], None)
    client = deployed.client(create_api_key(deployed.aws_env, tenant, "tests"))
    client.timeout = 30
    return client


def _secrets(api) -> list[dict[str, Any]]:
    response = api.request("GET", "/v1/signing-secrets")
    assert response.status_code == 200, response.text
    return response.json()["secrets"]


def _rotate(api, **body: str) -> list[dict[str, Any]]:
    response = api.request("POST", "/v1/signing-secrets:rotate", json=body or None)
    assert response.status_code == 201, response.text
    return response.json()["secrets"]


def _python_accepts(secret: dict[str, Any], request: Received) -> bool:
    try:
        Webhook(secret["standard_webhooks_secret"]).verify(request.body, request.headers, json_parse=False)
    except WebhookVerificationError:
        return False
    return True


def _node_accepts(secret: dict[str, Any], request: Received) -> bool:
    body = base64.b64encode(request.body).decode()
    recorded = {"secret": secret["standard_webhooks_secret"], "body": body, "headers": request.headers}
    verified = subprocess.run(
        ["node", "--input-type=module", "-e", NODE_VERIFY],
        input=json.dumps(recorded),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        check=False,
    )
    return verified.returncode == 0


def _both_libraries_accept(secret: dict[str, Any], request: Received) -> bool:
    return _python_accepts(secret, request) and _node_accepts(secret, request)


def _corral_signature_verifies(secret: dict[str, Any], request: Received, url: str) -> None:
    """Raises unless Corral-Signature (v2), keyed by the secret's string as shown, verifies: what receivers
    written before Standard Webhooks check."""
    verify_signature(request.headers, request.body, [secret["secret"]], method="POST", url=url)


@contextmanager
def node_receiver(secrets_: list[dict[str, Any]]) -> Iterator[int]:
    """The example Node receiver, verifying with the npm library, on a free loopback port."""
    shown = ",".join(secret["standard_webhooks_secret"] for secret in secrets_)
    env = {"PATH": os.environ["PATH"], "CORRAL_SIGNING_SECRETS": shown}
    process = subprocess.Popen(
        ["node", str(NODE_RECEIVER), "--port", "0"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield json.loads(process.stdout.readline())["listening"]
    finally:
        process.terminate()
        process.wait(timeout=10)


def _run_retried_job(api, hooks, body: Any = None) -> tuple[str, str, list[Received]]:
    """An HTTP job answered 503 once, then 200: two attempts of one job. (job id, URL, attempts)"""
    path = hooks.path(Answer(503, b"overloaded", {"Retry-After": "1"}), Answer(200, b"done", {}))
    payload = {"url": hooks.url(path), "body": {"invoice": 42} if body is None else body}
    job = api.wait(api.enqueue("http", payload, max_attempts=3), timeout=90)
    assert (job["status"], job["attempts"]) == ("succeeded", 2), job
    return job["id"], hooks.url(path), hooks.received(path)


def _through_node(api, secrets_: list[dict[str, Any]], body: Any = None) -> dict[str, Any]:
    with node_receiver(secrets_) as port:
        payload = {"url": f"http://127.0.0.1:{port}/hooks", "body": {"order": 7} if body is None else body}
        return api.wait(api.enqueue("http", payload), timeout=60)


@pytest.mark.parametrize("form", FORMS)
def test_before_a_rotation_every_attempt_verifies_with_both_libraries(deployed, hooks, form):
    api = _tenant(deployed, "before", form)
    [secret] = _secrets(api)
    assert (secret["standard_webhooks_secret"] == secret["secret"]) is (form == "issued-now")

    job_id, url, attempts = _run_retried_job(api, hooks, body="plain text, not JSON")

    assert [r.headers["webhook-id"] for r in attempts] == [job_id, job_id]  # one id across attempts
    for request in attempts:
        assert request.headers["webhook-signature"].count("v1,") == 2  # the secret and the next one
        assert _both_libraries_accept(secret, request)
        _corral_signature_verifies(secret, request, url)
    job = _through_node(api, [secret], body="plain text")
    assert (job["status"], job["result"]["body"]["verified"]) == ("succeeded", True), job


@pytest.mark.parametrize("form", FORMS)
def test_during_a_rotation_receivers_on_the_old_and_on_the_new_secret_both_accept(deployed, hooks, form):
    api = _tenant(deployed, "during", form)
    [old] = _secrets(api)
    new = _rotate(api)[0]

    _job_id, url, attempts = _run_retried_job(api, hooks)

    for request in attempts:
        assert request.headers["webhook-signature"].count("v1,") == 3  # old, new, and the next one
        for secret in (old, new):
            assert _both_libraries_accept(secret, request)
            _corral_signature_verifies(secret, request, url)
    for secrets_ in ([old], [new]):
        assert _through_node(api, secrets_)["status"] == "succeeded"


@pytest.mark.parametrize("form", FORMS)
def test_after_the_old_secret_is_expired_only_the_new_one_verifies(deployed, hooks, form):
    api = _tenant(deployed, "after", form)
    [old] = _secrets(api)
    new = _rotate(api)[0]
    expired = api.request("POST", f"/v1/signing-secrets/{old['id']}/expire")
    assert expired.status_code == 200, expired.text

    _job_id, _url, attempts = _run_retried_job(api, hooks)

    for request in attempts:
        assert request.headers["webhook-signature"].count("v1,") == 2  # the new secret and the next one
        assert _both_libraries_accept(new, request)
        assert not _python_accepts(old, request) and not _node_accepts(old, request)
    assert _through_node(api, [new])["status"] == "succeeded"
    refused = _through_node(api, [old])  # the receiver answers 400: dead at once
    assert (refused["status"], refused["attempts"]) == ("dead", 1), refused


def test_a_destinations_own_secret_signs_its_requests_and_no_other(deployed, hooks):
    api = _tenant(deployed, "destination")
    [unbound] = _secrets(api)
    origin = hooks.url("").rstrip("/")
    own = _rotate(api, destination=origin)[0]
    assert own["destination"] == origin

    path = hooks.path()
    job = api.wait(api.enqueue("http", {"url": hooks.url(path), "body": {"order": 8}}), timeout=60)

    assert job["status"] == "succeeded", job
    [request] = hooks.received(path)
    assert _both_libraries_accept(own, request)
    assert not _python_accepts(unbound, request)  # a secret leaked by another receiver forges nothing here
