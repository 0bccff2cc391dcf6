"""What resumes a durable job, from each client, on the deployed stack (examples/jobs' durable types): the Python
SDK's and the CLI's `events.send` / `corral events send` resuming `order_flow` once however often the event is
sent, `tokens.complete` / `corral tokens complete` completing `approval` once (the second a conflict), the
TypeScript SDK's same two calls, `corral get` showing the steps and the wait, and the dashboard's timeline of a
waiting job and of the same job once it has resumed, in headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from client import Conflict
from tests.client_ts import built_client_ts
from tests.e2e.cli_runner import run_cli
from tests.e2e.test_dashboard import Tab, signed_in_tab

pytestmark = pytest.mark.e2e


# A paid order_flow's steps, each run once: (status, attempts).
PAID_ORDER_STEPS = {name: ("succeeded", 1) for name in ("reserve", "payment", "charge", "notify")}


def _steps(job: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {step["id"]: (step["status"], step["attempts"]) for step in job.get("steps", [])}


@pytest.fixture(scope="module")
def waiting_order(api) -> tuple[str, str]:
    """An order_flow job waiting for its payment event: (its id, its order)."""
    order = f"o-{uuid.uuid4().hex[:8]}"
    job_id = api.enqueue("order_flow", {"order": order, "pay_within_seconds": 600})
    api.wait(job_id, statuses=("waiting",), timeout=120)
    return job_id, order


@pytest.fixture(scope="module")
def tab(deployed) -> Iterator[Tab]:
    with signed_in_tab(deployed.api_url + "/dashboard", deployed.api_key) as tab:
        yield tab
        assert tab.errors == [], tab.errors


def test_corral_get_shows_a_waiting_jobs_wait_in_words_and_its_steps(deployed, waiting_order):
    job_id, order = waiting_order

    shown = run_cli(deployed, "get", job_id)

    assert shown.code == 0, shown.stderr
    assert f'event payment.received matching {{"order": "{order}"}}, timing out' in shown.stdout
    lines = shown.stdout.splitlines()
    reserve = next(line for line in lines if "reserve" in line)
    payment = next(line for line in lines if "wait_for_event" in line)
    assert "succeeded" in reserve and "waiting" in payment and lines.index(reserve) < lines.index(payment)


def test_the_dashboard_shows_a_waiting_jobs_steps_and_what_it_waits_for(tab, waiting_order):
    job_id, order = waiting_order
    page = tab.page

    tab.go(f"/jobs/{job_id}")

    page.get_by_test_id("steps").wait_for()
    waiting_for = page.get_by_test_id("waiting-for").text_content()
    assert "payment.received" in waiting_for and order in waiting_for and "payment" in waiting_for
    rows = page.locator("[data-testid=steps] li")
    assert [rows.nth(i).get_attribute("data-step-id") for i in range(rows.count())] == ["reserve", "payment"]
    assert page.locator("li[data-step-id=reserve] .badge.badge-succeeded").count() == 1
    assert page.locator("li[data-step-id=payment] .badge.badge-waiting").count() == 1
    assert page.locator("li[data-step-id=payment] .timeline-bar").bounding_box()["width"] > 0
    tab.shot("durable-01-waiting")


def test_an_event_sent_by_the_cli_and_again_by_the_sdk_resumes_the_job_once(deployed, api, waiting_order, tab):
    job_id, order = waiting_order
    event_id = f"pay-{order}"
    data = json.dumps({"order": order, "amount_cents": 1999})

    sent = run_cli(deployed, "events", "send", "payment.received", "--data", data, "--id", event_id)
    again = api.events.send("payment.received", {"order": order, "amount_cents": 1999}, id=event_id)

    assert (sent.code, sent.stdout.strip(), again) == (0, event_id, event_id), sent.stderr
    done = api.wait(job_id, timeout=120)
    assert done["status"] == "succeeded" and done["result"]["status"] == "paid", done
    assert _steps(done) == PAID_ORDER_STEPS
    # The timeline follows: every step succeeded, and nothing waits any more (the page polls every 3 s).
    page = tab.page
    page.wait_for_selector("li[data-step-id=notify] .badge.badge-succeeded", timeout=60_000)
    assert page.get_by_test_id("waiting-for").count() == 0
    assert page.locator("[data-testid=steps] .badge.badge-succeeded").count() == 4
    tab.shot("durable-02-resumed")


def test_bad_data_is_a_clear_cli_error_naming_the_flag(deployed):
    refused = run_cli(deployed, "events", "send", "payment.received", "--data", "{not json")

    assert refused.code == 2 and "--data is not valid JSON" in refused.stderr


def test_a_token_is_completed_once_by_the_sdk_and_the_cli_is_told_it_conflicts(deployed, api):
    job_id = api.enqueue("approval")
    token_id = api.wait(job_id, statuses=("waiting",), timeout=120)["waiting_for"]["token"]

    completed = api.tokens.complete(token_id, {"approved": True})
    with pytest.raises(Conflict):
        api.tokens.complete(token_id, {"approved": False})
    by_cli = run_cli(deployed, "tokens", "complete", token_id, "--data", '{"approved": false}')

    assert completed == {"id": token_id, "status": "completed"}
    assert by_cli.code == 4 and "conflict" in by_cli.stderr, by_cli
    assert api.wait(job_id, timeout=120)["result"] == {"decision": {"approved": True}}


_TS_SCRIPT = """
import { Conflict, Corral } from "%(dist)s";
const corral = Corral.fromEnv();
const jobId = await corral.enqueue("approval");
const waiting = await corral.wait(jobId, { statuses: ["waiting"], timeoutMs: 120000 });
const completed = await corral.tokens.complete(waiting.waiting_for.token, { approved: "from TypeScript" });
let second = "completed twice";
try { await corral.tokens.complete(waiting.waiting_for.token); } catch (error) { second = error instanceof Conflict; }
const done = await corral.wait(jobId, { timeoutMs: 120000 });
const eventId = await corral.events.send("nobody.waits", { n: 1 });
const seen = { completed: completed.status, second, result: done.result, steps: done.steps.length, eventId };
console.log(JSON.stringify(seen));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node (the CDK's)")
def test_the_typescript_sdk_completes_a_token_once_and_sends_an_event(deployed):
    dist = built_client_ts() / "dist" / "index.js"
    env = {**os.environ, "CORRAL_API_URL": deployed.api_url, "CORRAL_API_KEY": deployed.api_key}

    ran = subprocess.run(
        ["node", "--input-type=module", "-e", _TS_SCRIPT % {"dist": dist.as_uri()}],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )

    assert ran.returncode == 0, ran.stderr[-3000:]
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    assert seen["eventId"].startswith("ev_")
    assert {key: seen[key] for key in ("completed", "second", "result", "steps")} == {
        "completed": "completed",
        "second": True,
        "result": {"decision": {"approved": "from TypeScript"}},
        "steps": 3,
    }
