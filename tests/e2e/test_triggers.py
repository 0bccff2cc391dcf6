"""Event triggers on the deployed stack (docs/decisions/triggers.md), driven by the SDK and the CLI: an event sent
twice with one id starts exactly one job per matching trigger, each with the event's data laid over its payload
and `started_by`; an event no trigger matches starts none (asserted after events that did); another tenant's
event, with the same name and id, starts none of this tenant's.

Which jobs an event started is read from its own job's result (`started`), whose id is the tenant's keyed id of
`event:<event id>` (shared/flow/triggers.py `event_job_key`), and each started job's id is derived from it and the
trigger's name: the test mints both with the deployment's id secret.
"""

from __future__ import annotations

import uuid

import pytest

from local.deploy import DEMO_TENANT
from shared import ids
from shared.flow.triggers import event_job_key, started_job_id
from tests.e2e.cli_runner import run_cli

pytestmark = pytest.mark.e2e

OTHER_TENANT = "other-tenant"  # conftest's other_tenant_api


def _send(client, name: str, data: object, event_id: str) -> None:
    sent = client.request("POST", "/v1/events", json={"name": name, "data": data, "id": event_id})
    assert sent.status_code == 202, sent.text


def _started(client, secret: bytes, tenant: str, event_id: str) -> list[str]:
    """The jobs the event started, as its own job's result lists them, once it has run."""
    event_job = client.wait(ids.keyed_id(secret, tenant, event_job_key(event_id)), timeout=90)
    assert event_job["status"] == "succeeded", event_job
    return sorted(event_job["result"]["started"])


def test_an_event_starts_one_job_per_matching_trigger_once_per_id_and_never_another_tenants(
    deployed, api, other_tenant_api, job_id_secret
):
    run = uuid.uuid4().hex[:8]
    paid, refund = f"paid-{run}", f"refund-{run}"
    pro, every, damaged = f"pro-{run}", f"every-{run}", f"damaged-{run}"
    api.triggers.create(pro, paid, "echo", {"from": "trigger", "plan": "unset"}, match={"plan": "pro"})
    made = run_cli(deployed, "triggers", "create", every, paid, "echo", "--payload", '{"n": 1}', "--json")
    assert made.code == 0, made.stderr
    made = run_cli(deployed, "triggers", "create", damaged, refund, "echo", "--match", '{"reason": "damaged"}')
    assert made.code == 0, made.stderr
    listed = run_cli(deployed, "triggers", "list", "--json")
    assert listed.code == 0, listed.stderr
    assert {pro, every, damaged} <= {trigger["name"] for trigger in listed.json()["triggers"]}

    # Sent twice with one id: one event, each matching trigger's job started once.
    first = f"ev-{run}-1"
    _send(api, paid, {"plan": "pro", "order": 7}, first)
    _send(api, paid, {"plan": "pro", "order": 7}, first)
    expected = {name: started_job_id(job_id_secret, DEMO_TENANT, first, name) for name in (pro, every)}
    assert _started(api, job_id_secret, DEMO_TENANT, first) == sorted(expected.values())
    for name, job_id in expected.items():
        job = api.wait(job_id, timeout=90)
        assert job["status"] == "succeeded" and job["attempts"] == 1, job
        assert job["started_by"] == {"trigger": name, "event": first}, job
    assert api.get(expected[pro])["result"] == {"from": "trigger", "plan": "pro", "order": 7}
    assert api.get(expected[every])["result"] == {"n": 1, "plan": "pro", "order": 7}
    shown = run_cli(deployed, "get", expected[pro], "--json")
    assert shown.code == 0 and shown.json()["started_by"]["trigger"] == pro, shown.stderr

    # Matching one trigger of two, then none at all.
    second = f"ev-{run}-2"
    _send(api, paid, {"plan": "basic"}, second)
    assert _started(api, job_id_secret, DEMO_TENANT, second) == [
        started_job_id(job_id_secret, DEMO_TENANT, second, every)
    ]
    third = f"ev-{run}-3"
    _send(api, refund, {"reason": "late"}, third)
    assert _started(api, job_id_secret, DEMO_TENANT, third) == []

    # Another tenant's event of the same name and id starts none of this tenant's triggers.
    _send(other_tenant_api, paid, {"plan": "pro", "order": 7}, first)
    assert _started(other_tenant_api, job_id_secret, OTHER_TENANT, first) == []
    assert list(other_tenant_api.triggers.list()) == []

    # Deleted by the SDK and the CLI: the jobs they started stay, and a new event starts nothing.
    api.triggers.delete(pro)
    for name in (every, damaged):
        deleted = run_cli(deployed, "triggers", "delete", name)
        assert deleted.code == 0, deleted.stderr
    assert {pro, every, damaged}.isdisjoint(trigger["name"] for trigger in api.triggers.list())
    fourth = f"ev-{run}-4"
    _send(api, paid, {"plan": "pro"}, fourth)
    assert _started(api, job_id_secret, DEMO_TENANT, fourth) == []
    assert api.get(expected[pro])["status"] == "succeeded"


def test_a_bad_trigger_is_refused_naming_its_field_and_nothing_is_created(deployed, api):
    name = f"bad-{uuid.uuid4().hex[:8]}"
    cases = [
        ({"event": "e" * 257, "job": {"type": "echo"}}, "event"),
        ({"event": "e", "match": ["plan"], "job": {"type": "echo"}}, "match"),
        ({"event": "e", "job": {"type": "no_such_type"}}, "job.type"),
        ({"event": "e", "job": {"type": "echo", "max_attempts": 99}}, "job.max_attempts"),
    ]
    for body, field in cases:
        refused = api.request("POST", "/v1/triggers", json={"name": name, **body})
        assert refused.status_code == 422, refused.text
        answer = refused.json()
        assert field in {problem["field"] for problem in answer.get("fields", [])} | {answer.get("field")}, answer
    missing = run_cli(deployed, "triggers", "get", name)
    assert missing.code == 3, missing.stdout  # not found: nothing was created
