"""Per-tenant quotas through the deployed stack: an operator lowers a tenant's limits with the CLI, the HTTP
API answers 429 `quota_exceeded` (or 403 when no retry can help) naming the quota and the count, and a
deleted schedule, a cancelled far-future job and a far-future job whose firing reaches the worker each give
their unit back. GET /v1/schedules pages with a cursor."""

from __future__ import annotations

import uuid

import pytest

from client import Corral
from shared import settings
from tests.e2e.cli_runner import run_cli
from tests.e2e.helpers import eventually

FAR = settings.MAX_SQS_DELAY_SECONDS + 3600


def _tenant_with_limits(deployed, *limits: str) -> tuple[str, Corral]:
    """A new tenant whose limits the operator set before its first request (so no API instance caches
    the defaults for it), and an SDK client with its key."""
    deployed.require_aws()
    name = f"q-{uuid.uuid4().hex[:8]}"
    assert run_cli(deployed, "tenants", "create", name, "--json").code == 0
    sets = [arg for limit in limits for arg in ("--set", limit)]
    changed = run_cli(deployed, "tenants", "limits", name, *sets, "--json")
    assert changed.code == 0, changed.stderr
    minted = run_cli(deployed, "keys", "create", name, "--json")
    assert minted.code == 0, minted.stderr
    return name, Corral(deployed.api_url, minted.json()["key"])


def _usage(deployed, tenant: str) -> dict[str, int]:
    shown = run_cli(deployed, "tenants", "limits", tenant, "--json")
    assert shown.code == 0, shown.stderr
    return shown.json()["usage"]


def _schedule(api: Corral, name: str, **job: object):
    body = {"name": name, "expression": "rate(1 hour)", "job": {"type": "echo", **job}}
    return api.request("POST", "/v1/schedules", json=body)


def test_the_schedule_quota_answers_429_until_a_schedule_is_deleted(deployed):
    tenant, api = _tenant_with_limits(deployed, "max_schedules=2")
    shown = run_cli(deployed, "tenants", "limits", tenant, "--json").json()
    assert (shown["limits"]["max_schedules"], shown["overridden"]) == (2, ["max_schedules"])
    human = run_cli(deployed, "tenants", "limits", tenant).stdout
    assert "max_schedules" in human and "2 (set)" in human

    assert _schedule(api, "a", timeout_seconds=3).status_code == 201
    assert _schedule(api, "b").status_code == 201
    refused = _schedule(api, "c")

    assert refused.status_code == 429, refused.text
    assert refused.json()["error"] == "quota_exceeded"
    assert refused.json()["message"] == "schedule quota reached: 2 of 2 (max_schedules)"
    assert "Retry-After" not in refused.headers  # passes when the tenant holds less, not after a wait
    assert api.schedules.get("a")["job"]["timeout_seconds"] == 3
    assert _usage(deployed, tenant)["schedules"] == 2

    api.schedules.delete("a")
    assert _schedule(api, "c").status_code == 201
    assert _usage(deployed, tenant)["schedules"] == 2

    first = api.request("GET", "/v1/schedules", params={"limit": 1}).json()
    assert [s["name"] for s in first["schedules"]] == ["b"] and first["next_cursor"]
    assert [s["name"] for s in api.schedules.list(page_size=1)] == ["b", "c"]
    listed = run_cli(deployed, "schedules", "list", "--json", api_key=api.api_key)
    assert [s["name"] for s in listed.json()["schedules"]] == ["b", "c"]


def test_a_request_larger_than_the_quota_is_403(deployed):
    _tenant, api = _tenant_with_limits(deployed, "max_schedules=0", "max_far_future_jobs=0")

    refused = _schedule(api, "a")
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"] == "forbidden" and "(max_schedules)" in refused.json()["message"]
    far = api.request("POST", "/v1/jobs", json={"type": "echo", "delay_seconds": FAR})
    assert far.status_code == 403 and "(max_far_future_jobs)" in far.json()["message"]
    assert api.request("POST", "/v1/jobs", json={"type": "echo", "delay_seconds": 60}).status_code == 202


def test_far_future_jobs_hold_units_until_cancelled_or_their_firing_arrives(deployed):
    tenant, api = _tenant_with_limits(deployed, "max_far_future_jobs=2")
    first = api.enqueue("echo", {"n": 1}, delay_seconds=FAR)
    second = api.enqueue("echo", {"n": 2}, delay_seconds=FAR)

    refused = api.request("POST", "/v1/jobs", json={"type": "echo", "delay_seconds": FAR})
    assert refused.status_code == 429, refused.text
    assert refused.json()["message"] == "far-future job quota reached: 2 of 2 (max_far_future_jobs)"
    batch = api.request(
        "POST", "/v1/jobs:batch", json={"jobs": [{"type": "echo", "delay_seconds": FAR}, {"type": "echo"}]}
    )
    assert batch.status_code == 207, batch.text
    results = batch.json()["results"]
    assert (results[0]["status"], results[0]["error"], results[0]["quota"]) == (
        "rejected",
        "quota_exceeded",
        "max_far_future_jobs",
    )
    assert results[1]["status"] == "queued"

    api.cancel(first)  # gives its unit back
    third = api.enqueue("echo", {"n": 3}, delay_seconds=FAR)
    assert _usage(deployed, tenant)["far_future_jobs"] == 2

    # The second job's schedule fires: Scheduler puts its Input on the queue (done here by hand, an hour early).
    entry = deployed.aws("scheduler").get_schedule(Name=f"d-{second}", GroupName=settings.SCHEDULE_GROUP)
    deployed.aws("sqs").send_message(QueueUrl=deployed.queue_url(), MessageBody=entry["Target"]["Input"])
    assert api.wait(second, timeout=30)["status"] == "succeeded"
    eventually(
        lambda: _usage(deployed, tenant)["far_future_jobs"] == 1,
        timeout=30,
        message="the far-future job's unit to come back once it ran",
    )
    assert api.enqueue("echo", {"n": 4}, delay_seconds=FAR) != third

    recounted = run_cli(deployed, "tenants", "limits", tenant, "--recount", "--json").json()["recount"]
    held = {"schedules": 0, "far_future_jobs": 2, "firings_per_hour": 0, "triggers": 0, "waiting_jobs": 0}
    assert recounted["after"] == held == recounted["before"]


@pytest.mark.parametrize("args", [("--set", "max_schedules=lots"), ("--set", "nope=3"), ("--clear", "nope")])
def test_the_limits_command_refuses_nonsense_without_a_traceback(deployed, args):
    deployed.require_aws()
    name = f"q-{uuid.uuid4().hex[:8]}"
    assert run_cli(deployed, "tenants", "create", name, "--json").code == 0
    ran = run_cli(deployed, "tenants", "limits", name, *args)
    assert ran.code != 0 and ran.stderr


def test_a_durable_job_waiting_beyond_max_waiting_jobs_fails_its_attempt_naming_the_quota(deployed):
    tenant, api = _tenant_with_limits(deployed, "max_waiting_jobs=1")
    first = api.enqueue("nap", {"seconds": FAR})  # a sleep beyond SQS's delay holds a unit while it waits
    assert api.wait(first, statuses=("waiting",), timeout=60)["status"] == "waiting"

    second = api.enqueue("nap", {"seconds": FAR})
    refused = api.wait(second, statuses=("failed", "dead"), timeout=60)

    assert "max_waiting_jobs" in (refused.get("error") or ""), refused
    assert _usage(deployed, tenant)["waiting_jobs"] == 1
    api.cancel(first)

    def released() -> bool:
        # The second's retry may take the unit the first gave back (it fits now); cancelling it gives that back.
        api.request("POST", f"/v1/jobs/{second}/cancel")  # waiting, failed or dead by now: whichever, harmless
        return _usage(deployed, tenant)["waiting_jobs"] == 0

    eventually(released, message="the cancelled jobs' units given back")
