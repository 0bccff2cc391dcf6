"""API key scopes over HTTP on the deployed stack: keys minted with `corral keys create --scope` and
listed with it; a read key reads and is refused writes and signing secrets; an enqueue key adds jobs
and reads nothing; the SDK raises PermissionDenied and the CLI says so in one line."""

from __future__ import annotations

import uuid

import pytest

from client import Corral, PermissionDenied
from tests.e2e.cli_runner import run_cli


@pytest.fixture(scope="module")
def tenant(deployed) -> str:
    deployed.require_aws()  # keys are minted with AWS credentials (the operator CLI)
    return f"scope-{uuid.uuid4().hex[:8]}"


def _mint(deployed, tenant: str, *scope: str) -> dict[str, str]:
    minted = run_cli(deployed, "keys", "create", tenant, "--new-tenant", "--label", "e2e", *scope, "--json")
    assert minted.code == 0, minted.stderr
    return minted.json()


@pytest.fixture(scope="module")
def minted(deployed, tenant) -> dict[str, dict[str, str]]:
    return {
        "full": _mint(deployed, tenant),
        "read": _mint(deployed, tenant, "--scope", "read"),
        "enqueue": _mint(deployed, tenant, "--scope", "enqueue"),
    }


def test_Ld_keys_are_minted_with_a_scope_and_listed_with_it(deployed, tenant, minted):
    assert {scope: key["scope"] for scope, key in minted.items()} == {
        "full": "full",
        "read": "read",
        "enqueue": "enqueue",
    }
    listed = run_cli(deployed, "keys", "list", tenant, "--json").json()["keys"]
    assert {k["key_id"]: k["scope"] for k in listed} == {key["key_id"]: scope for scope, key in minted.items()}
    human = run_cli(deployed, "keys", "list", tenant).stdout
    assert "scope" in human.lower()
    for scope, key in minted.items():
        [line] = [line for line in human.splitlines() if key["key_id"] in line]
        assert scope in line


def test_Ld_a_read_key_reads_but_cannot_enqueue_or_see_signing_secrets(deployed, minted):
    full = Corral(deployed.api_url, minted["full"]["key"])
    job_id = full.enqueue("echo", {"scoped": True})
    read = Corral(deployed.api_url, minted["read"]["key"])

    assert read.request("GET", f"/v1/jobs/{job_id}").status_code == 200
    assert read.request("GET", "/v1/jobs").status_code == 200
    assert read.request("GET", "/v1/stats").status_code == 200
    refused = read.request("POST", "/v1/jobs", json={"type": "echo"})
    assert refused.status_code == 403
    assert refused.json() == {
        "error": "insufficient_scope",
        "message": "this key's scope is 'read'; POST /v1/jobs needs 'enqueue' or 'full'",
        "scope": "read",
        "needed_scopes": ["enqueue", "full"],
    }
    secrets = read.request("GET", "/v1/signing-secrets")
    assert (secrets.status_code, secrets.json()["needed_scopes"]) == (403, ["full"])
    assert full.request("GET", "/v1/signing-secrets").status_code == 200
    with pytest.raises(PermissionDenied) as denied:
        read.enqueue("echo")
    assert denied.value.scope == "read"


def test_Ld_an_enqueue_key_adds_jobs_but_reads_nothing_back(deployed, minted):
    enqueue = Corral(deployed.api_url, minted["enqueue"]["key"])
    job_id = enqueue.enqueue("echo", {"from": "a producer"})

    listing = enqueue.request("GET", "/v1/jobs")
    assert (listing.status_code, listing.json()["error"]) == (403, "insufficient_scope")
    assert enqueue.request("GET", f"/v1/jobs/{job_id}").status_code == 403
    full = Corral(deployed.api_url, minted["full"]["key"])
    assert full.wait(job_id)["status"] == "succeeded"


def test_Ld_the_cli_says_in_one_line_which_scope_a_command_needs(deployed, minted):
    ran = run_cli(deployed, "enqueue", "echo", api_key=minted["read"]["key"])

    assert ran.code == 5  # auth
    assert "this key's scope is 'read'; POST /v1/jobs needs 'enqueue' or 'full'" in ran.stderr
    assert len(ran.stderr.strip().splitlines()) <= 2  # a message, not a traceback (run_cli checks that too)
