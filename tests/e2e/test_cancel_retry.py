"""Seeing, cancelling and retrying jobs on the deployed stack: list (pages, filters), cancel, retry, bulk retry, stats.

A fresh tenant per module keeps listing and stats exact while other tests' jobs run in the same stack.
"""

from __future__ import annotations

import time
import uuid

import pytest
from botocore.exceptions import ClientError

from local.deploy import create_api_key
from shared import settings
from tests.e2e.helpers import cancelled_message_arrived

FINISHED = ("succeeded", "dead", "cancelled")
REQUEST_TIMEOUT = 30  # a fresh tenant's first calls may meet cold API instances on a loaded 2-core machine


def _fresh_tenant(deployed, prefix: str):
    deployed.require_aws()  # the fresh tenant's key is written straight into the table
    client = deployed.client(create_api_key(deployed.aws_env, f"{prefix}-{uuid.uuid4().hex[:8]}", label="tests"))
    client.timeout = REQUEST_TIMEOUT
    return client


@pytest.fixture(scope="module")
def tenant_api(deployed):
    return _fresh_tenant(deployed, "control")


@pytest.fixture(scope="module")
def ran(tenant_api):
    """Jobs this tenant ran, enqueued one after another: 4 echo (succeeded), 1 that dies, 1 that dies then is
    retried by the test below. Enqueued once for the module, so their waits overlap."""
    started = time.time()
    echo = [tenant_api.enqueue("echo", {"n": n}) for n in range(4)]
    dies = tenant_api.enqueue("fail", {"times": 9}, max_attempts=1)
    retried = tenant_api.enqueue("fail", {"times": 1}, max_attempts=1)
    for job_id in [*echo, dies, retried]:
        tenant_api.wait(job_id, FINISHED, timeout=90)
    return {"started": started, "echo": echo, "dies": dies, "retried": retried}


def _list(api, **query):
    response = api.request("GET", "/v1/jobs", params=query)
    assert response.status_code == 200, response.text
    return response.json()


def _all_pages(api, bound=20, **query):
    pages, cursor = [], None
    for _ in range(bound):
        page = _list(api, **query, **({"cursor": cursor} if cursor else {}))
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return pages
    raise AssertionError(f"more than {bound} pages")


def test_list_pages_through_the_tenants_jobs_newest_first(tenant_api, ran, api):
    pages = _all_pages(tenant_api, limit=2)

    listed = [job["id"] for page in pages for job in page["jobs"]]
    assert [len(page["jobs"]) for page in pages] == [2, 2, 2]
    assert listed == [ran["retried"], ran["dies"], *reversed(ran["echo"])]
    assert "no record" in pages[0]["note"]
    first_echo = pages[-1]["jobs"][-1]
    assert (first_echo["status"], first_echo["type"], first_echo["max_attempts"]) == ("succeeded", "echo", 3)
    assert not {job["id"] for job in _list(api, limit=100)["jobs"]} & set(listed)  # another tenant sees none


def test_list_filters_by_status_type_and_time(tenant_api, ran):
    def ids(**query):
        return [job["id"] for page in _all_pages(tenant_api, **query) for job in page["jobs"]]

    assert ids(type="echo", status="succeeded") == list(reversed(ran["echo"]))
    assert set(ids(status="dead")) <= {ran["dies"], ran["retried"]}
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ran["started"] + 3600))
    assert ids(since=since) == []


def test_a_bad_cursor_or_status_is_a_422_naming_it(tenant_api):
    for query, field in (({"cursor": "bm90LWEtY3Vyc29y"}, "cursor"), ({"status": "lost"}, "status")):
        response = tenant_api.request("GET", "/v1/jobs", params=query)
        assert response.status_code == 422, response.text
        assert field in response.json()["fields"][0]["field"]


def test_a_dead_job_retried_runs_again_and_succeeds(tenant_api, ran):
    job_id = ran["retried"]
    assert tenant_api.get(job_id)["status"] == "dead"

    response = tenant_api.request("POST", f"/v1/jobs/{job_id}/retry")

    assert response.status_code == 202, response.text
    assert response.json() == {"id": job_id, "status": "queued"}
    job = tenant_api.wait(job_id, FINISHED, timeout=60)
    assert (job["status"], job["attempts"], job["retries"]) == ("succeeded", 2, 1)
    assert job["result"] == {"succeeded_on_attempt": 2}
    assert job["payload"] == {"times": 1}


def test_a_delayed_job_cancelled_before_it_runs_never_runs_and_can_be_retried(tenant_api):
    job_id = tenant_api.enqueue("echo", {"late": True}, delay_seconds=4)

    response = tenant_api.request("POST", f"/v1/jobs/{job_id}/cancel")

    assert response.status_code == 200, response.text
    cancelled = response.json()
    assert (cancelled["status"], cancelled["attempts"], cancelled["result"]) == ("cancelled", 0, None)
    again = tenant_api.request("POST", f"/v1/jobs/{job_id}/cancel")
    assert (again.status_code, again.json()) == (200, cancelled)  # idempotent
    job = cancelled_message_arrived(tenant_api, job_id, timeout=45)
    assert (job["status"], job["attempts"], job["result"], job["payload"]) == ("cancelled", 0, None, {"late": True})

    assert tenant_api.request("POST", f"/v1/jobs/{job_id}/retry").status_code == 202
    assert tenant_api.wait(job_id, ("succeeded",), timeout=60)["result"] == {"late": True}


def test_a_far_future_job_cancelled_loses_its_schedule(tenant_api, deployed):
    job_id = tenant_api.enqueue("echo", {"x": 1}, delay_seconds=settings.MAX_SQS_DELAY_SECONDS + 3600)

    response = tenant_api.request("POST", f"/v1/jobs/{job_id}/cancel")

    assert response.status_code == 200, response.text
    assert (response.json()["status"], response.json()["payload"]) == ("cancelled", {"x": 1})
    with pytest.raises(ClientError) as gone:
        deployed.aws("scheduler").get_schedule(Name=f"d-{job_id}", GroupName=settings.SCHEDULE_GROUP)
    assert gone.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_a_running_job_cannot_be_cancelled_nor_a_finished_one(tenant_api, ran):
    job_id = tenant_api.enqueue("sleep", {"seconds": 3})
    tenant_api.wait(job_id, ("running", "succeeded"), timeout=30)

    running = tenant_api.request("POST", f"/v1/jobs/{job_id}/cancel")
    assert running.status_code == 409, running.text
    assert running.json()["error"] == "conflict" and "running" in running.json()["message"]
    assert tenant_api.wait(job_id, FINISHED, timeout=30)["status"] == "succeeded"

    finished = tenant_api.request("POST", f"/v1/jobs/{ran['echo'][0]}/cancel")
    assert finished.status_code == 409 and "finished" in finished.json()["message"]
    assert tenant_api.request("POST", f"/v1/jobs/{ran['echo'][0]}/retry").status_code == 409


def test_cancel_racing_the_claim_has_one_winner(tenant_api):
    """Cancel right after enqueue: the worker may claim first. Either way the answer matches what happened."""
    jobs = [tenant_api.enqueue("echo", {"race": n}) for n in range(4)]
    answers = {job_id: tenant_api.request("POST", f"/v1/jobs/{job_id}/cancel") for job_id in jobs}

    for job_id, answer in answers.items():
        final = tenant_api.wait(job_id, FINISHED, timeout=60)
        if answer.status_code == 200:
            assert (final["status"], final["attempts"], final["result"]) == ("cancelled", 0, None)
        else:
            assert answer.status_code == 409, answer.text
            assert final["status"] == "succeeded"


def test_another_tenants_job_cannot_be_cancelled_or_retried(api, ran):
    for action in ("cancel", "retry"):
        response = api.request("POST", f"/v1/jobs/{ran['dies']}/{action}")
        assert (response.status_code, response.json()["error"]) == (404, "not_found")


def test_bulk_retry_restarts_dead_jobs_in_bounded_batches(tenant_api):
    since = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 1))
    dead = [tenant_api.enqueue("fail", {"times": 1, "n": n}, max_attempts=1) for n in range(3)]
    for job_id in dead:
        assert tenant_api.wait(job_id, FINISHED, timeout=60)["status"] == "dead"

    first = tenant_api.request("POST", "/v1/jobs:retry", json={"type": "fail", "since": since, "limit": 2}).json()
    second = tenant_api.request("POST", "/v1/jobs:retry", json={"type": "fail", "since": since, "limit": 2}).json()

    assert (first["retried"], first["more"], second["retried"], second["more"]) == (2, True, 1, False)
    assert sorted(first["ids"] + second["ids"]) == sorted(dead)
    for job_id in dead:
        assert tenant_api.wait(job_id, FINISHED, timeout=60)["status"] == "succeeded"


def test_stats_agree_with_the_jobs_this_tenant_ran(deployed):
    api = _fresh_tenant(deployed, "stats")
    jobs = [api.enqueue("echo", n) for n in range(3)] + [api.enqueue("fail", {"times": 9}, max_attempts=1)]
    for job_id in jobs:
        api.wait(job_id, FINISHED, timeout=60)

    response = api.request("GET", "/v1/stats", params={"window_seconds": 600})

    assert response.status_code == 200, response.text
    stats = response.json()
    assert {k: v for k, v in stats["counts"].items() if v} == {"succeeded": 3, "dead": 1}
    per_minute = stats["per_minute"]
    assert len(per_minute) == 60
    assert sum(m["enqueued"] for m in per_minute) == 4
    assert (sum(m["succeeded"] for m in per_minute), sum(m["dead"] for m in per_minute)) == (3, 1)
    latency = stats["enqueue_to_run_ms"]
    assert latency["count"] == 4 and 0 <= latency["p50"] <= latency["p99"] < 60_000
    assert stats["sampled"] is False and "job store" in stats["source"]
