"""Durable jobs on the deployed stack (docs/decisions/durable-jobs.md), with examples/jobs' durable types in its
jobs function: steps recorded once across a retry, a sleep on SQS's delay and one on a Scheduler schedule (the
local profile's threshold is 20 s), a wait for an event resumed by POST /v1/events and one that times out, a
token completed through its URL without a key, and a waiting job cancelled that never resumes.

Where the emulator differs: the worker's token URL is the path alone on this stack (its `api_url` is not set:
the API's address on the emulator is not the one CloudFormation spells), so the test posts it to the API's base.
"""

from __future__ import annotations

import uuid

import pytest
import requests

from local.deploy import DEMO_TENANT
from shared import settings
from shared.durable import tokens

pytestmark = pytest.mark.e2e


def _steps(job: dict) -> dict[str, tuple[str, int]]:
    return {step["id"]: (step["status"], step["attempts"]) for step in job.get("steps", [])}


def test_steps_are_recorded_once_across_a_retry(api):
    job_id = api.enqueue("steps_then_retry")

    job = api.wait(job_id, timeout=90)

    assert job["status"] == "succeeded", job
    assert job["result"] == {"first": {"ran_on_attempt": 1}, "second": {"ran_on_attempt": 2}}
    assert _steps(job) == {"first": ("succeeded", 1), "second": ("succeeded", 2)}


def test_a_sleep_holds_nothing_and_resumes(api):
    job_id = api.enqueue("nap", {"seconds": 3})

    waiting = api.wait(job_id, statuses=("waiting", "succeeded"), timeout=60)
    done = api.wait(job_id, timeout=90)

    assert waiting["status"] == "waiting" and waiting["waiting_for"]["kind"] == "sleep", waiting
    assert done["result"] == {"before": "before", "after": "after"}
    assert _steps(done)["nap"] == ("succeeded", 1)


def test_a_sleep_beyond_the_threshold_wakes_through_a_one_time_schedule(api, deployed):
    job_id = api.enqueue("nap", {"seconds": 25})  # the local profile's threshold: 20 s
    api.wait(job_id, statuses=("waiting",), timeout=60)
    if deployed.has_aws_access:
        scheduler = deployed.aws("scheduler")
        found = scheduler.list_schedules(GroupName=settings.SCHEDULE_GROUP, NamePrefix=f"w-{job_id}")["Schedules"]
        assert len(found) == 1, found  # its wake timer: a one-time schedule, not an SQS delay

    done = api.wait(job_id, timeout=150)

    assert done["status"] == "succeeded", done
    assert _steps(done)["nap"][0] == "succeeded"


def test_a_wait_for_an_event_resumes_on_post_events_and_answers_none_at_its_timeout(api):
    order = f"o-{uuid.uuid4().hex[:8]}"
    paid = api.enqueue("order_flow", {"order": order, "pay_within_seconds": 300})
    expired = api.enqueue("order_flow", {"order": f"{order}-late", "pay_within_seconds": 3})
    api.wait(paid, statuses=("waiting",), timeout=60)

    sent = api.request(
        "POST", "/v1/events", json={"name": "payment.received", "data": {"order": order, "amount_cents": 1999}}
    )

    assert sent.status_code == 202, sent.text
    job = api.wait(paid, timeout=90)
    assert job["status"] == "succeeded" and job["result"]["status"] == "paid", job
    assert list(_steps(job)) == ["reserve", "payment", "charge", "notify"]
    late = api.wait(expired, timeout=90)
    assert late["result"]["status"] == "expired", late
    assert _steps(late)["payment"][0] == "timed_out"


def test_a_token_is_completed_by_its_url_without_a_key(api, deployed, job_id_secret):
    job_id = api.enqueue("approval")
    waiting = api.wait(job_id, statuses=("waiting",), timeout=60)
    assert waiting["waiting_for"]["kind"] == "token", waiting
    token_id = waiting["waiting_for"]["token"]
    # The URL the job mailed itself, made as the worker makes it (the id secret, the tenant, the token's id).
    url_path = tokens.url("", job_id_secret, DEMO_TENANT, token_id)
    wrong = url_path.rsplit("/", 1)[0] + "/" + "a" * 32 + ":complete"

    refused = requests.post(deployed.api_url + wrong, json={"approved": True}, timeout=30)
    completed = requests.post(deployed.api_url + url_path, json={"approved": True}, timeout=30)
    again = requests.post(deployed.api_url + url_path, json={"approved": False}, timeout=30)

    assert refused.status_code == 404, refused.text
    assert completed.status_code == 200, completed.text
    assert completed.json() == {"id": token_id, "status": "completed"}
    assert again.status_code == 409
    done = api.wait(job_id, timeout=90)
    assert done["result"] == {"decision": {"approved": True}}


def test_a_waiting_job_cancelled_never_resumes(api):
    order = f"o-{uuid.uuid4().hex[:8]}"
    job_id = api.enqueue("order_flow", {"order": order, "pay_within_seconds": 300})
    witness = api.enqueue("order_flow", {"order": order, "pay_within_seconds": 300})  # waits for the same event
    api.wait(job_id, statuses=("waiting",), timeout=60)
    api.wait(witness, statuses=("waiting",), timeout=60)

    cancelled = api.cancel(job_id)
    paid = {"order": order, "amount_cents": 500}
    sent = api.request("POST", "/v1/events", json={"name": "payment.received", "data": paid})

    assert cancelled["status"] == "cancelled"
    assert sent.status_code == 202
    handled = api.wait(witness, timeout=90)  # the event has been handled
    assert handled["status"] == "succeeded" and handled["result"]["status"] == "paid", handled
    job = api.get(job_id)
    assert job["status"] == "cancelled"
    assert _steps(job)["payment"][0] == "cancelled"


def test_a_parent_gets_its_childs_result_and_its_childrens_in_order(api):
    job_id = api.enqueue("fan_out", {"numbers": [3, 4, 5]})

    waiting = api.wait(job_id, statuses=("waiting", "succeeded"), timeout=60)
    done = api.wait(job_id, timeout=120)

    assert waiting["status"] == "succeeded" or waiting["waiting_for"]["kind"] == "job", waiting
    assert done["status"] == "succeeded", done
    assert done["result"] == {"first": {"n": 3, "square": 9}, "squares": [9, 16, 25]}
    assert _steps(done) == {"first": ("succeeded", 1), "all": ("succeeded", 1)}


def test_a_dead_child_raises_in_its_parent_which_handles_it(api):
    job_id = api.enqueue("fan_out", {"numbers": [1, 2, 3], "fail": [2]})

    done = api.wait(job_id, timeout=120)

    assert done["status"] == "succeeded", done
    (failed,) = done["result"]["failed"]
    assert failed in done["result"]["error"] and "asked to fail on 2" in done["result"]["error"]
    child = api.get(failed)
    assert child["status"] == "dead" and child["parent"]["id"] == job_id, child
