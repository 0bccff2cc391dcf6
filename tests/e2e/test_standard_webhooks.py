"""Standard Webhooks on the deployed stack: every attempt of a real HTTP job verifies with the PyPI and
the npm `standardwebhooks` libraries, before, during and after a secret rotation, and a destination's own
secret signs its requests alone.

Each phase has a tenant of its own whose secrets no worker has cached yet, so what the API says of its
secrets is what the worker signs with at once (otherwise within SIGNING_SECRETS_CACHE_SECONDS).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from local.deploy import create_api_key
from tests.receiver import Answer, Received, receiver

ROOT = Path(__file__).resolve().parents[2]
NODE_RECEIVER = ROOT / "examples" / "receivers" / "standard_webhooks_receiver.mjs"
# Verifies one recorded request with the npm library: {"secret", "body", "headers"} on stdin, exit 0 if valid.
# (The npm library's verify also parses the body as JSON, as Standard Webhooks payloads are: bodies here are JSON.)
NODE_VERIFY = """
import { Webhook } from "standardwebhooks";
let input = "";
process.stdin.on("data", (d) => (input += d)).on("end", () => {
  const { secret, body, headers } = JSON.parse(input);
  try { new Webhook(secret).verify(body, headers); process.exit(0); }
  catch (error) { console.error(String(error)); process.exit(1); }
});
"""

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node (the CDK's)")


@pytest.fixture(scope="module")
def hooks(deployed):
    if not deployed.emulated:
        pytest.skip("the receivers run on this machine's loopback, which only the local profile may call")
    with receiver() as running:
        yield running


def _tenant(deployed, phase: str) -> Any:
    client = deployed.client(create_api_key(deployed.aws_env, f"stdhooks-{phase}-{uuid.uuid4().hex[:8]}", "tests"))
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


def _python_accepts(secret: str, request: Received) -> bool:
    try:
        Webhook(secret).verify(request.body, request.headers, json_parse=False)
    except WebhookVerificationError:
        return False
    return True


def _node_accepts(secret: str, request: Received) -> bool:
    recorded = {"secret": secret, "body": request.body.decode(), "headers": request.headers}
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


@contextmanager
def node_receiver(secrets: list[str]) -> Iterator[int]:
    """The example Node receiver, verifying with the npm library, on a free loopback port."""
    env = {"PATH": os.environ["PATH"], "CORRAL_SIGNING_SECRETS": ",".join(secrets)}
    process = subprocess.Popen(
        ["node", str(NODE_RECEIVER), "--port", "0"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield json.loads(process.stdout.readline())["listening"]
    finally:
        process.terminate()
        process.wait(timeout=10)


def _run_retried_job(api, hooks) -> tuple[str, list[Received]]:
    """An HTTP job answered 503 once, then 200: two attempts of one job."""
    path = hooks.path(Answer(503, b"overloaded", {"Retry-After": "1"}), Answer(200, b"done", {}))
    job = api.wait(api.enqueue("http", {"url": hooks.url(path), "body": {"invoice": 42}}, max_attempts=3), timeout=90)
    assert (job["status"], job["attempts"]) == ("succeeded", 2), job
    return job["id"], hooks.received(path)


def _through_node(api, secrets: list[str]) -> dict[str, Any]:
    with node_receiver(secrets) as port:
        return api.wait(
            api.enqueue("http", {"url": f"http://127.0.0.1:{port}/hooks", "body": {"order": 7}}), timeout=60
        )


def test_before_a_rotation_every_attempt_verifies_with_both_libraries(deployed, hooks):
    api = _tenant(deployed, "before")
    [secret] = [s["secret"] for s in _secrets(api)]

    job_id, attempts = _run_retried_job(api, hooks)

    assert [r.headers["webhook-id"] for r in attempts] == [job_id, job_id]  # one id across attempts
    for request in attempts:
        assert _python_accepts(secret, request) and _node_accepts(secret, request)
        assert request.headers["webhook-signature"].count("v1,") == 1
    job = _through_node(api, [secret])
    assert (job["status"], job["result"]["body"]["verified"]) == ("succeeded", True), job


def test_during_a_rotation_receivers_on_the_old_and_on_the_new_secret_both_accept(deployed, hooks):
    api = _tenant(deployed, "during")
    [old] = [s["secret"] for s in _secrets(api)]
    new = _rotate(api)[0]["secret"]

    _job_id, attempts = _run_retried_job(api, hooks)

    for request in attempts:
        assert request.headers["webhook-signature"].count("v1,") == 2
        for secret in (old, new):
            assert _python_accepts(secret, request) and _node_accepts(secret, request)
    for secrets in ([old], [new]):
        assert _through_node(api, secrets)["status"] == "succeeded"


def test_after_the_old_secret_is_expired_only_the_new_one_verifies(deployed, hooks):
    api = _tenant(deployed, "after")
    [old] = _secrets(api)
    new = _rotate(api)[0]["secret"]
    expired = api.request("POST", f"/v1/signing-secrets/{old['id']}/expire")
    assert expired.status_code == 200, expired.text

    _job_id, attempts = _run_retried_job(api, hooks)

    for request in attempts:
        assert _python_accepts(new, request) and _node_accepts(new, request)
        assert not _python_accepts(old["secret"], request) and not _node_accepts(old["secret"], request)
    assert _through_node(api, [new])["status"] == "succeeded"
    refused = _through_node(api, [old["secret"]])  # the receiver answers 400: dead at once
    assert (refused["status"], refused["attempts"]) == ("dead", 1), refused


def test_a_destinations_own_secret_signs_its_requests_and_no_other(deployed, hooks):
    api = _tenant(deployed, "destination")
    [unbound] = [s["secret"] for s in _secrets(api)]
    origin = hooks.url("").rstrip("/")
    own = _rotate(api, destination=origin)[0]
    assert own["destination"] == origin

    path = hooks.path()
    job = api.wait(api.enqueue("http", {"url": hooks.url(path), "body": {"order": 8}}), timeout=60)

    assert job["status"] == "succeeded", job
    [request] = hooks.received(path)
    assert _python_accepts(own["secret"], request) and _node_accepts(own["secret"], request)
    assert not _python_accepts(unbound, request)  # a secret leaked by another receiver forges nothing here
