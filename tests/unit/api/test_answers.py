"""Every route answers the shape the OpenAPI document declares for it, and the document declares one.

The routes answer the domain's views as they are (functions/api/answers.py declares their shapes for
the document only), so these tests are what keep the document, and the TypeScript SDK's types generated
from it, true: each route is called through the API's handler (moto behind it) and each success is
validated against its declared schema, which forbids fields it does not name.
"""

from __future__ import annotations

import ast
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from shared.durable import tokens as durable_tokens
from shared.flow.triggers import started_job_id
from shared.store.durable import token_items
from shared.store.id_secret import id_secret
from shared.tenants import operators, tenants
from tests.unit import worker_harness
from tests.unit.api_harness import answer

ROOT = Path(__file__).resolve().parents[3]
VAGUE = {"", "Successful Response", "The job", "The batch", "The schedule", "Created", "Deleted"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    from functions.api.resolver import openapi

    return json.loads(openapi().body)


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method.upper(), path, op) for path, item in document["paths"].items() for method, op in item.items()]


def test_every_success_names_its_shape_and_every_error_is_the_error_shape(document: dict[str, Any]) -> None:
    for method, path, operation in _operations(document):
        for code, response in operation["responses"].items():
            schema = response["content"]["application/json"]["schema"]
            if int(code) >= 400:
                assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, code)
            else:
                assert response["description"] not in VAGUE, (method, path, code)
                assert schema.get("$ref", "").endswith("Out"), (method, path, code, schema)


def test_no_route_builds_an_error_answer_or_reads_the_tenant_by_hand() -> None:
    """Routes raise shared/errors.py's errors (functions/api/responses.py answers them) and take their
    tenant as a parameter (functions/api/caller.py)."""
    builders = {"error_response", "error_result", "error_body"}
    routers = ["jobs", "control", "batches", "schedules", "signing_secrets", "operator", "dashboard_files"]
    for name in [*routers, "enqueue_routes", "job_bodies"]:
        source = (ROOT / "functions" / "api" / f"{name}.py").read_text()
        called = {
            node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call)
        }
        assert not called & builders, (name, called & builders)
        assert "router.context" not in source, name


def _validator(document: dict[str, Any], method: str, path: str, status: int) -> Any:
    operation = document["paths"][path][method.lower()]
    schema = operation["responses"][str(status)]["content"]["application/json"]["schema"]
    return jsonschema_rs.validator_for({**schema, "components": document["components"]})


def test_every_route_answers_the_shape_it_declares(scheduler_env: dict[str, Any], document: dict[str, Any]) -> None:
    key, operator = tenants.create_key("acme"), operators.create_key("answers")
    seen: set[tuple[str, str, int]] = set()

    def call(method: str, path: str, body: Any = None, *, route: str | None = None, **query: str) -> Any:
        """Answer one request, checked against its route's declared shape (`route`: the path as declared)."""
        status, answered = answer(method, path, operator if path.startswith("/operator/") else key, body, query)
        assert status < 400, (method, path, status, answered)
        declared = route or path
        errors = [str(error) for error in _validator(document, method, declared, status).iter_errors(answered)]
        assert not errors, (method, declared, status, errors)
        seen.add((method, declared, status))
        return answered

    def work_all() -> None:
        for _ in range(50):
            if worker_harness.poll(scheduler_env) is None:
                return

    # jobs: enqueued, one keyed, run, one dead; a bulk enqueue with a refusal; listed, cancelled, retried.
    job = call("POST", "/v1/jobs", {"type": "echo", "payload": {"n": 1}, "concurrency": {"key": "k", "limit": 2}})
    call("POST", "/v1/jobs", {"type": "echo", "idempotency_key": "once", "on_success": {"type": "echo"}})
    call("POST", "/v1/jobs:batch", {"jobs": [{"type": "echo"}]})
    call("POST", "/v1/jobs:batch", {"jobs": [{"type": "echo"}, {"type": ""}]})
    dead = call("POST", "/v1/jobs", {"type": "fail", "payload": {"times": 5}, "max_attempts": 1})
    later = call("POST", "/v1/jobs", {"type": "echo", "delay_seconds": 600})
    unique = {"type": "echo", "delay_seconds": 600, "unique": {"key": "nightly", "until": "started"}}
    call("POST", "/v1/jobs", unique)
    call("POST", "/v1/jobs", unique)  # 200: a duplicate of the first
    call("POST", "/v1/jobs:batch", {"jobs": [unique]})  # its item a duplicate
    call("GET", f"/v1/jobs/{later['id']}", route="/v1/jobs/{job_id}")  # queued: no record yet
    call("POST", f"/v1/jobs/{later['id']}/cancel", route="/v1/jobs/{job_id}/cancel")
    work_all()
    call("GET", f"/v1/jobs/{job['id']}", route="/v1/jobs/{job_id}")
    call("POST", f"/v1/jobs/{dead['id']}/retry", route="/v1/jobs/{job_id}/retry")
    work_all()
    call("POST", "/v1/jobs:retry", {"limit": 5})
    call("GET", "/v1/jobs")
    call("GET", "/v1/jobs", status="succeeded", limit="2")
    call("GET", "/v1/stats")

    # batches
    batch = call(
        "POST", "/v1/batches", {"jobs": [{"type": "echo"}], "on_complete": {"type": "echo"}, "description": "d"}
    )
    call("GET", "/v1/batches")
    call("GET", f"/v1/batches/{batch['id']}", route="/v1/batches/{batch_id}")
    call("GET", f"/v1/batches/{batch['id']}/jobs", route="/v1/batches/{batch_id}/jobs")
    call("POST", f"/v1/batches/{batch['id']}/cancel", route="/v1/batches/{batch_id}/cancel")
    work_all()

    # schedules: a run queued, one running, one skipped for it; a backfill; paused, resumed, changed, deleted.
    one = "/v1/schedules/{name}"
    call(
        "POST",
        "/v1/schedules",
        {"name": "n", "expression": "rate(1 minute)", "job": {"type": "echo"}, "overlap": "skip"},
    )
    call("POST", "/v1/schedules/n:trigger", route=one + ":trigger")
    running = scheduler_env["sqs"].receive_message(QueueUrl=scheduler_env["queue_url"])["Messages"][0]
    _claim(running["Body"])
    call("POST", "/v1/schedules/n:trigger", route=one + ":trigger")
    end = datetime.now(UTC)
    window = {"start": (end - timedelta(minutes=2)).isoformat(), "end": end.isoformat()}
    call("POST", "/v1/schedules/n:backfill", window, route=one + ":backfill")
    call("POST", "/v1/schedules/n:pause", {"note": "why"}, route=one + ":pause")
    call("POST", "/v1/schedules/n:resume", route=one + ":resume")
    call("PATCH", "/v1/schedules/n", {"job": {"timeout_seconds": 30}}, route=one)
    call("PATCH", "/v1/schedules/n", {"description": "d"}, route=one, dry_run="true")
    call("GET", "/v1/schedules/n", route=one)
    call("GET", "/v1/schedules")
    call("DELETE", "/v1/schedules/n", route=one)

    # signing secrets
    first = call("GET", "/v1/signing-secrets")["secrets"][0]
    call("POST", "/v1/signing-secrets:rotate", {"destination": "https://example.com"})
    call("POST", "/v1/signing-secrets:rotate")
    expire = "/v1/signing-secrets/{secret_id}/expire"
    call("POST", f"/v1/signing-secrets/{first['id']}/expire", route=expire)

    # events and tokens (a token as a durable job's create_token step makes it)
    call("POST", "/v1/events", {"name": "payment.received", "data": {"order": 1}, "id": "pay-1"})
    now = time.time()
    for token_id in ("tk_" + "a" * 26, "tk_" + "b" * 26):
        token_items.create(token_id, "acme", "jt-durable", "approval", now + 600, now)
    call("POST", f"/v1/tokens/{'tk_' + 'a' * 26}:complete", {"data": 1}, route="/v1/tokens/{token_id}:complete")
    capability_url = durable_tokens.url("", id_secret(), "acme", "tk_" + "b" * 26)
    call("POST", capability_url, {"approved": True}, route="/v1/tokens/{token_id}/{capability}:complete")

    # triggers: created, listed, read; an event starts its job (which shows started_by); deleted
    one_trigger = "/v1/triggers/{name}"
    call(
        "POST", "/v1/triggers", {"name": "on-paid", "event": "paid", "match": {"plan": "pro"}, "job": {"type": "echo"}}
    )
    call("GET", "/v1/triggers")
    call("GET", "/v1/triggers/on-paid", route=one_trigger)
    call("POST", "/v1/events", {"name": "paid", "data": {"plan": "pro"}, "id": "paid-1"})
    work_all()
    started = started_job_id(id_secret(), "acme", "paid-1", "on-paid")
    shown = call("GET", f"/v1/jobs/{started}", route="/v1/jobs/{job_id}")
    assert shown["started_by"] == {"trigger": "on-paid", "event": "paid-1"}, shown
    call("DELETE", "/v1/triggers/on-paid", route=one_trigger)

    # operator
    call("GET", "/operator/v1/queues")

    declared = {
        (method, path, int(code))
        for method, path, operation in _operations(document)
        for code in operation["responses"]
        if int(code) < 400
    }
    assert seen == declared, f"not called: {sorted(declared - seen)}"


def _claim(body: str) -> None:
    """A worker's claim of the run `body` carries: it is running, the live run a trigger under overlap skip meets."""
    from shared.model.message import JobMessage
    from shared.store.jobs import job_claims

    claimed = job_claims.claim(JobMessage.from_dict(json.loads(body)), "m1", time.time(), 300)
    assert isinstance(claimed, job_claims.Claimed)
