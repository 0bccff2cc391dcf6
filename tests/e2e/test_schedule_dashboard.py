"""A schedule run from the dashboard, in headless Chromium against the deployed stack: pause (with a note)
and resume with the state shown, "Run now", a second "Run now" skipped while the first runs (overlap skip),
and an edit whose next firings show before it is saved. Screenshots go to test-artifacts/dashboard/."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from local.deploy import create_api_key
from tests.e2e.test_dashboard import Tab, signed_in_tab


@pytest.fixture(scope="module")
def tenant(deployed) -> Any:
    deployed.require_aws()  # a fresh tenant of its own, its key written straight into the table
    api = deployed.client(create_api_key(deployed.aws_env, f"sched-{uuid.uuid4().hex[:8]}", label="schedule ui"))
    api.timeout = 30
    api.wait(api.enqueue("echo", "warm-up"), timeout=300)  # a warm worker: a run starts as soon as it is sent
    return api


@pytest.fixture(scope="module")
def tab(deployed, tenant) -> Iterator[Tab]:
    with signed_in_tab(deployed.api_url + "/dashboard", tenant.api_key) as tab:
        yield tab
        # The preview's dry run of a bad expression answers 422 on purpose; Chromium logs each 4xx fetch.
        unexpected = [error for error in tab.errors if "status of 422" not in error]
        assert unexpected == [], unexpected


@pytest.fixture(scope="module")
def name(tenant) -> str:
    name = f"ui-report-{uuid.uuid4().hex[:6]}"
    body = {
        "name": name,
        "expression": "rate(1 day)",
        "start": "2099-01-01T00:00:00Z",  # never fires by itself during the test
        "job": {"type": "sleep", "payload": {"seconds": 4}},
        "overlap": "skip",
    }
    assert tenant.request("POST", "/v1/schedules", json=body).status_code == 201
    return name


def _open(tab: Tab, name: str) -> None:
    tab.go("/schedules")
    tab.page.get_by_role("link", name=name).click()
    tab.page.get_by_role("button", name="Run now").wait_for()


def test_pause_with_a_note_then_resume_shows_the_state(tab, tenant, name):
    page = tab.page
    _open(tab, name)
    page.get_by_role("button", name="Pause", exact=True).click()
    page.fill("#pause-note", "incident 42")
    page.get_by_role("button", name="Pause it").click()
    page.get_by_text("incident 42").wait_for()
    assert page.locator(".facts .badge").first.text_content() == "paused"
    tab.shot("20-schedule-paused")
    shown = tenant.schedules.get(name)
    assert (shown["state"], shown["note"]) == ("paused", "incident 42")

    page.get_by_role("button", name="Resume").click()
    page.locator(".facts .badge-enabled").wait_for()
    assert tenant.schedules.get(name)["state"] == "enabled"


def test_run_now_twice_runs_once_and_shows_the_second_skipped(tab, tenant, name):
    page = tab.page
    _open(tab, name)
    page.get_by_role("button", name="Run now").click()
    page.get_by_text("is queued").wait_for()
    page.wait_for_timeout(1_000)  # the first run is under way (a 4 s sleep)
    page.get_by_role("button", name="Run now").click()
    # Skipped by the API at once ("Not run: ..."), or by the worker's claim if the first run had not been
    # picked up yet: either way the run list shows it (it reloads every 15 s).
    page.locator('.runs li[data-status="skipped"]').wait_for()
    skipped = page.locator('.runs li[data-status="skipped"]').first
    assert "manual" in skipped.text_content() and "still" in skipped.text_content()
    tab.shot("21-schedule-skipped-run")
    runs = tenant.schedules.get(name)["runs"]
    assert sorted(run["status"] for run in runs)[-1] == "skipped" and len(runs) == 2


def test_an_edit_shows_the_next_firings_before_it_is_saved(tab, tenant, name):
    page = tab.page
    _open(tab, name)
    page.get_by_role("button", name="Edit").click()
    page.fill("#edit-expression", "cron(0 25 * * ? *)")
    page.locator(".preview .alert-error").wait_for()  # a bad hour, named before anything is saved
    assert "hours" in page.locator(".preview .alert-error").text_content()

    page.fill("#edit-expression", "cron(30 6 * * ? *)")
    page.locator(".preview ol.firings li").first.wait_for()
    assert page.locator(".preview ol.firings li").count() == 5
    assert tenant.schedules.get(name)["expression"] == "rate(1 day)"  # the preview saved nothing
    tab.shot("22-schedule-edit-preview")

    page.get_by_role("button", name="Save changes").click()
    page.get_by_text("is updated").wait_for()
    assert tenant.schedules.get(name)["expression"] == "cron(30 6 * * ? *)"
