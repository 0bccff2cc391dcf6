"""Operator commands (AWS credentials) against the deployed stack: a tenant and its key, used, listed
and revoked (401 once the key caches' stated bound has passed); an operator key minted, listed and
revoked by its id; a dead job in the DLQ, listed with its reason and redriven.

The bound is the key caches' time, which the unit tests drive without the clock (tests/unit/tenants/test_tenants.py):
here a loaded machine gets room past it (REVOKED_ROOM_SECONDS); a key that stays open still fails."""

from __future__ import annotations

import uuid

import pytest
import requests

from client import Corral, Unauthorized
from tests.e2e.cli_runner import run_cli
from tests.e2e.helpers import eventually

REVOKED_ROOM_SECONDS = 30


@pytest.fixture
def tenant(deployed) -> str:
    deployed.require_aws()
    name = f"op-{uuid.uuid4().hex[:8]}"
    created = run_cli(deployed, "tenants", "create", name, "--json")
    assert created.code == 0, created.stderr
    return name


def test_a_key_is_minted_used_listed_and_revoked(deployed, tenant):
    minted = run_cli(deployed, "keys", "create", tenant, "--label", "ci", "--json")
    assert minted.code == 0, minted.stderr
    key, key_id = minted.json()["key"], minted.json()["key_id"]
    api = Corral(deployed.api_url, key)
    job_id = api.enqueue("echo", {"tenant": tenant})
    assert api.wait(job_id)["status"] == "succeeded"
    assert any(j["id"] == job_id for j in api.list(max_items=10))

    listed = run_cli(deployed, "keys", "list", tenant, "--json").json()["keys"]
    assert [(k["key_id"], k["label"], k["last4"]) for k in listed] == [(key_id, "ci", key[-4:])]
    human = run_cli(deployed, "keys", "list", tenant).stdout
    assert key_id in human and key not in human
    assert tenant in run_cli(deployed, "tenants", "list").stdout

    revoked = run_cli(deployed, "keys", "revoke", key_id, "--tenant", tenant, "--json")
    assert revoked.code == 0, revoked.stderr
    answer = revoked.json()
    assert (answer["keys_left"], answer["schedules_still_firing"]) == (0, 0)
    bound = answer["effective_within_seconds"]

    def refused() -> bool:
        try:
            api.get(job_id)
        except Unauthorized:
            return True
        return False

    eventually(refused, timeout=bound + REVOKED_ROOM_SECONDS, message=f"the revoked key refused (bound {bound} s)")
    assert run_cli(deployed, "keys", "list", tenant, "--json").json()["keys"] == []
    assert run_cli(deployed, "keys", "revoke", key_id, "--tenant", tenant).code == 3


def test_an_operator_key_is_minted_listed_and_revoked_by_its_id(deployed):
    deployed.require_aws()
    minted = run_cli(deployed, "operators", "create", "--label", "on call", "--expires-in-days", "1", "--json")
    assert minted.code == 0, minted.stderr
    key, key_id = minted.json()["key"], minted.json()["key_id"]

    def opens_the_operator_routes() -> bool:
        answer = requests.get(
            f"{deployed.api_url}/operator/v1/queues", headers={"Authorization": f"Bearer {key}"}, timeout=10
        )
        assert answer.status_code in (200, 401), answer.text
        return answer.status_code == 200

    assert opens_the_operator_routes()
    listed = {k["key_id"]: k for k in run_cli(deployed, "operators", "list", "--json").json()["operator_keys"]}
    assert listed[key_id]["label"] == "on call" and listed[key_id]["expires_at"]
    assert key not in run_cli(deployed, "operators", "list").stdout

    revoked = run_cli(deployed, "operators", "revoke", key_id, "--json")
    assert revoked.code == 0, revoked.stderr
    bound = revoked.json()["effective_within_seconds"]
    eventually(
        lambda: not opens_the_operator_routes(),
        timeout=bound + REVOKED_ROOM_SECONDS,
        message=f"the revoked operator key refused (bound {bound} s)",
    )
    assert key_id not in {k["key_id"] for k in run_cli(deployed, "operators", "list", "--json").json()["operator_keys"]}
    assert run_cli(deployed, "operators", "revoke", key_id).code == 3
    assert run_cli(deployed, "operators", "create", "--expires-in-days", "0").code == 2


def test_keys_for_an_unknown_tenant_are_refused(deployed):
    deployed.require_aws()
    ran = run_cli(deployed, "keys", "create", f"nobody-{uuid.uuid4().hex[:6]}", "--json")
    assert ran.code == 3 and "tenants create" in ran.json()["message"]


def test_a_dead_job_is_listed_with_its_reason_and_redriven_for_its_tenant(deployed, tenant):
    key = run_cli(deployed, "keys", "create", tenant, "--json").json()["key"]
    api = Corral(deployed.api_url, key)
    job_id = api.enqueue("fail", {"times": 1}, max_attempts=1)
    assert api.wait(job_id)["status"] == "dead"

    listed = run_cli(deployed, "dlq", "list", "--tenant", tenant, "--json").json()
    assert listed["count"] >= 1
    mine = [m for m in listed["messages"] if m["job_id"] == job_id]
    assert len(mine) == 1 and mine[0]["tenant"] == tenant and mine[0]["type"] == "fail"
    assert mine[0]["reason"], "a dead job's DLQ message says why it died"
    human = run_cli(deployed, "dlq", "list", "--tenant", tenant)
    assert job_id in human.stdout and "reason" in human.stdout

    health = run_cli(deployed, "queue", "--json").json()
    by_name = {q["name"]: q for q in health["queues"]}
    assert by_name["corral-jobs-dlq"]["depth"] >= 1
    assert {"depth", "in_flight", "delayed", "oldest_age_seconds"} <= set(by_name["corral-jobs"])

    redriven = run_cli(deployed, "dlq", "redrive", "--tenant", tenant, "--json")
    assert redriven.code == 0, redriven.stderr
    assert redriven.json()["redriven"] == [job_id]
    # It runs again with a fresh attempt budget: `fail` times 1 fails only the first attempt, so attempt 2 succeeds.
    job = api.wait(job_id, ("succeeded",), timeout=60)
    assert (job["attempts"], job["retries"]) == (2, 1)
    assert job_id not in [m["job_id"] for m in run_cli(deployed, "dlq", "list", "--json").json()["messages"]]
    assert run_cli(deployed, "dlq", "redrive").code == 2  # whose? --tenant or --all
