"""The web dashboard in a real headless Chromium (Debian's, driven by Playwright) against the deployed stack.

One browser and one signed-in tab for the module; the jobs it watches are enqueued up front
through the API, so their runs overlap the page work. Every page is screenshotted into
test-artifacts/dashboard/ (not committed); any console error or page error fails the run.
"""

from __future__ import annotations

import os
import secrets
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from client import FINISHED
from local.deploy import create_api_key, create_operator_key, function_environment
from shared.store.tenants import signing_secret_items
from shared.store.tenants.signing_secret_items import SigningSecret
from shared.tenants import tenants
from shared.tenants.scopes import Scope
from tests.e2e.helpers import cancelled_message_arrived

CHROMIUM = os.environ.get("CORRAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
HOSTILE = {"note": "<script>window.__pwned = 1</script>", "img": "<img src=x onerror='window.__pwned = 2'>"}
UI_TIMEOUT_MS = 30_000
DELAY_SECONDS = 20  # the delayed job's SQS delay: long enough for the UI to cancel it first


@pytest.fixture(scope="module")
def tenant_name() -> str:
    return f"dash-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def tenant(deployed, tenant_name) -> Any:
    deployed.require_aws()  # a fresh tenant (its key written straight into the table): its own clean world
    api = deployed.client(create_api_key(deployed.aws_env, tenant_name, label="dashboard tests"))
    api.timeout = 30  # a cold API environment on a busy machine can take longer than the default 10 s
    return api


@pytest.fixture(scope="module")
def jobs(tenant) -> dict[str, str]:
    """Enqueued before the browser starts, so their runs overlap the page work: one that succeeds
    (with a hostile payload) and one that dies."""
    return {"hostile": tenant.enqueue("echo", HOSTILE), "dies": tenant.enqueue("fail", {"times": 1}, max_attempts=1)}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make install` installs Debian's chromium package")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


class Tab:
    """A browser tab on the dashboard that records every console error and uncaught page error."""

    def __init__(self, browser: Any, dashboard_url: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 860})
        self.page = self.context.new_page()
        self.page.set_default_timeout(UI_TIMEOUT_MS)
        self.url = dashboard_url
        self.errors: list[str] = []
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def sign_in(self, key: str) -> None:
        self.page.goto(self.url)
        self.page.fill("#api-key", key)
        self.page.click("button[type=submit]")

    def go(self, route: str) -> None:
        self.page.evaluate("route => { location.hash = route }", route)

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@contextmanager
def signed_in_tab(dashboard_url: str, key: str) -> Iterator[Tab]:
    """A browser of its own with one tab signed in with `key`, for a module's tests (closed after them)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make install` installs Debian's chromium package")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        tab = Tab(browser, dashboard_url)
        tab.page.goto(tab.url, timeout=90_000)  # the first load may meet cold API environments
        tab.page.wait_for_selector("#api-key")
        tab.sign_in(key)
        yield tab
        tab.context.close()
        browser.close()


@pytest.fixture(scope="module")
def tab(browser, deployed, tenant, jobs) -> Iterator[Tab]:
    tab = Tab(browser, deployed.api_url + "/dashboard")
    # The first load may start several API environments at once (the emulator spawns one per
    # concurrent request, each a cold start on a busy 2-core machine); later loads take ~1 s.
    tab.page.goto(tab.url, timeout=90_000)
    tab.page.wait_for_selector("#api-key")
    tab.shot("01-sign-in")
    tab.sign_in(tenant.api_key)
    yield tab
    tab.context.close()


def test_sign_in_shows_the_overview_with_counts_and_the_key_nowhere_but_session_storage(tab, tenant, jobs):
    page = tab.page
    page.wait_for_selector("[data-testid=counts]")
    assert "#/overview" in page.url and tenant.api_key not in page.url
    assert page.evaluate("() => sessionStorage.getItem('corral.key')") == tenant.api_key
    assert page.evaluate("() => localStorage.length + document.cookie.length") == 0
    tenant.wait(jobs["hostile"], ("succeeded",), timeout=60)
    # The overview refreshes on its own (every 10 s): the finished job is counted without a reload.
    page.wait_for_function("() => document.querySelector('[data-testid=count-succeeded]').textContent !== '0'")
    page.wait_for_selector(".chart .uplot")
    tab.shot("02-overview")


def test_a_job_enqueued_through_the_api_appears_and_its_hostile_payload_renders_as_text(tab, jobs):
    page = tab.page
    tab.go("/jobs")
    row = page.locator(f"tr[data-job-id='{jobs['hostile']}']")
    row.locator(".badge-succeeded").wait_for()
    tab.shot("03-jobs")
    row.locator("a").click()
    payload = page.get_by_test_id("payload")
    payload.wait_for()
    text = payload.text_content()
    assert HOSTILE["note"] in text and HOSTILE["img"] in text
    assert page.locator("pre img, pre script").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    assert page.get_by_test_id("result").text_content().count("<script>") == 1
    tab.shot("04-job-detail")


def test_a_dead_job_is_retried_from_the_ui_and_succeeds(tab, tenant, jobs):
    page = tab.page
    tenant.wait(jobs["dies"], ("dead",), timeout=60)
    tab.go("/dead")
    page.get_by_test_id(f"retry-{jobs['dies']}").wait_for()
    error = tenant.get(jobs["dies"])["error"]
    cell = page.locator(f"tr[data-job-id='{jobs['dies']}'] td.error-cell")
    assert error and cell.text_content() == cell.get_attribute("title") == error  # why it died, on the list itself
    tab.shot("05-dead")
    page.get_by_test_id(f"retry-{jobs['dies']}").click()
    page.locator(".alert-success").wait_for()
    job = tenant.wait(jobs["dies"], FINISHED, timeout=60)
    assert (job["status"], job["result"]) == ("succeeded", {"succeeded_on_attempt": 2})


def test_a_delayed_job_is_cancelled_from_the_ui_and_never_runs(tab, tenant):
    delayed = tenant.enqueue("echo", {"later": True}, delay_seconds=DELAY_SECONDS)
    page = tab.page
    tab.go("/delayed")
    page.fill("input[name=job-id]", delayed)
    page.get_by_role("button", name="Cancel job").click()
    page.locator(".alert-success").wait_for()
    assert tenant.get(delayed)["status"] == "cancelled"
    tab.shot("06-delayed")
    job = cancelled_message_arrived(tenant, delayed, timeout=DELAY_SECONDS + 40)
    assert (job["status"], job["attempts"], job["result"]) == ("cancelled", 0, None)


def test_a_schedule_shows_its_next_firings_in_words_and_is_deleted_from_the_ui(tab, tenant):
    name = f"weekday-report-{uuid.uuid4().hex[:6]}"
    body = {"name": name, "expression": "cron(0 9 ? * MON-FRI *)", "timezone": "Europe/Paris", "job": {"type": "echo"}}
    assert tenant.request("POST", "/v1/schedules", json=body).status_code == 201
    page = tab.page
    tab.go("/schedules")
    page.get_by_role("link", name=name).wait_for()
    tab.shot("07-schedules")
    page.get_by_role("link", name=name).click()
    page.locator("ol.firings li").first.wait_for()
    assert page.locator("ol.firings li").count() == 5
    assert "Monday through Friday" in page.locator(".card-header h2").first.text_content()
    tab.shot("08-schedule-detail")
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("button", name="Yes, delete it").click()
    page.wait_for_function("() => location.hash === '#/schedules'")
    assert tenant.request("GET", f"/v1/schedules/{name}").status_code == 404


def test_the_signing_secrets_page_rotates_when_the_route_exists(tab, tenant):
    if tenant.request("GET", "/v1/signing-secrets").status_code == 404:
        pytest.skip("this stack has no /v1/signing-secrets route")
    page = tab.page
    tab.go("/secrets")
    page.get_by_role("button", name="Rotate").click()
    page.locator(".alert-success").wait_for()
    tab.shot("09-signing-secrets")


def test_the_signing_secrets_page_shows_each_secrets_destination_and_standard_webhooks_form(
    tab, tenant, tenant_name, deployed
):
    """A destination's secret says which origin it signs for; a secret issued before the Standard Webhooks
    form also shows the string those libraries need (the same key, re-encoded)."""
    earlier = SigningSecret(id="ss_earlier", secret="whsec_" + secrets.token_urlsafe(32), created_at=time.time())
    with function_environment(deployed.aws_env):
        stored, version = signing_secret_items.read(tenant_name) or ([], None)
        assert signing_secret_items.write(tenant_name, [earlier, *stored], version)
    rotated = tenant.request("POST", "/v1/signing-secrets:rotate", json={"destination": "https://hooks.example.com"})
    assert rotated.status_code == 201, rotated.text
    [shown_earlier] = [s for s in rotated.json()["secrets"] if s["id"] == earlier.id]
    page = tab.page
    tab.go("/overview")
    tab.go("/secrets")

    bound = page.get_by_test_id("secret-destination").filter(has_text="https://hooks.example.com")
    bound.wait_for()
    assert page.get_by_test_id("secret-destination").filter(has_text="every other destination").count() >= 1
    row = page.locator("li.secret").filter(has=page.get_by_test_id("secret-standard"))
    assert row.count() == 1  # the earlier secret only: for one issued now the two strings are the same
    row.get_by_role("button", name="Show").click()
    assert row.get_by_test_id("secret-standard").text_content().endswith(shown_earlier["standard_webhooks_secret"])
    assert earlier.secret in row.text_content()
    tab.shot("09b-signing-secrets-destinations")


def test_the_operator_view_needs_an_operator_key_and_shows_the_queues(browser, deployed):
    operator = Tab(browser, deployed.api_url + "/dashboard")
    try:
        operator.sign_in(create_operator_key(deployed.aws_env, label="dashboard tests"))
        operator.page.get_by_test_id("queue-depth").wait_for()
        for figure in ("queue-in-flight", "dlq-depth", "workers-limit"):
            assert operator.page.get_by_test_id(figure).text_content().strip() not in ("", "—")
        operator.shot("10-operator")
        assert operator.errors == []
    finally:
        operator.context.close()


def test_Ld_a_read_only_key_sees_a_dead_job_and_is_told_plainly_that_it_cannot_retry_it(
    browser, deployed, tenant, tenant_name
):
    dead = tenant.enqueue("fail", {"times": 1}, max_attempts=1)
    tenant.wait(dead, ("dead",), timeout=60)
    with function_environment(deployed.aws_env):
        read_key = tenants.create_key(tenant_name, label="dashboard tests, read only", scope=Scope.READ)
    reader = Tab(browser, deployed.api_url + "/dashboard")
    try:
        reader.sign_in(read_key)
        reader.go("/dead")
        reader.page.get_by_test_id(f"retry-{dead}").click()
        refusal = reader.page.locator(".alert-error")
        refusal.wait_for()
        reader.shot("13-read-only-retry")
        text = refusal.text_content()
        assert "read-only API key" in text and "POST /v1/jobs/{job_id}/retry needs 'full'" in text, text
        assert "sign in with a key of scope 'full'" in text
        assert tenant.get(dead)["status"] == "dead"  # nothing was done
        # The browser reports the refused request itself; nothing else may have failed on the page.
        assert [error for error in reader.errors if "403" not in error] == []
    finally:
        reader.context.close()


def test_the_api_reference_lists_every_route_of_the_served_document_with_no_error(browser, deployed):
    document = deployed.client().request("GET", "/v1/openapi.json").json()
    routes = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    reference = Tab(browser, deployed.api_url + "/docs")
    try:
        reference.page.goto(reference.url, timeout=90_000)
        reference.page.locator(".opblock").first.wait_for()
        shown = reference.page.eval_on_selector_all(
            ".opblock",
            """blocks => blocks.map(block => [
                block.querySelector('.opblock-summary-method').textContent.trim(),
                block.querySelector('.opblock-summary-path').getAttribute('data-path')])""",
        )
        reference.shot("12-api-reference")
        assert {tuple(each) for each in shown} == routes
        assert reference.errors == []  # a CSP violation is a console error
    finally:
        reference.context.close()


def test_no_console_errors_and_a_narrow_screen_still_works(tab):
    page = tab.page
    page.set_viewport_size({"width": 390, "height": 800})
    tab.go("/overview")
    page.get_by_role("button", name="Menu").click()
    page.get_by_role("link", name="Jobs").click()
    page.locator("table").first.wait_for()
    tab.shot("11-narrow-jobs")
    assert tab.errors == []
