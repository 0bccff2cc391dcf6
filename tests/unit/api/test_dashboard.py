"""The dashboard's serving route and the operator path, in-process on moto."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from infra import bundling
from local.events import FakeLambdaContext, http_api_event
from shared.schedules.expressions import next_firings
from shared.tenants import operators, tenants


@pytest.fixture(scope="module", autouse=True)
def bundle() -> None:
    """The bundle the code asset carries, built where the handler reads it (git-ignored)."""
    from functions.api import dashboard_files as dashboard

    bundling.build_dashboard(bundling.ROOT / bundling.DASHBOARD_BUILD)
    dashboard.files.cache_clear()


def _call(method: str, path: str, key: str | None = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    from functions.api.handler import handler

    event = http_api_event(method, path, None, key)
    event["headers"].update(headers or {})
    return handler(event, FakeLambdaContext())


def _body(response: dict[str, Any]) -> str:
    raw = response["body"]
    if response.get("isBase64Encoded"):
        data = base64.b64decode(raw)
        zipped = response["headers"].get("Content-Encoding") == "gzip"
        return (gzip.decompress(data) if zipped else data).decode()
    return raw


def test_the_page_needs_no_key_and_carries_a_strict_policy(aws):
    response = _call("GET", "/dashboard")
    assert response["statusCode"] == 200
    headers = response["headers"]
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    policy = headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "script-src 'self';" in policy
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert '<script type="module" src="dashboard/app.js">' in _body(response)
    assert "<script>" not in _body(response) and "style=" not in _body(response)


def test_files_are_gzipped_when_asked_and_revalidated_by_etag(aws):
    plain = _call("GET", "/dashboard/app.js")
    assert plain["statusCode"] == 200 and plain["headers"]["Content-Type"].startswith("text/javascript")
    zipped = _call("GET", "/dashboard/app.js", headers={"accept-encoding": "gzip, br"})
    assert zipped["isBase64Encoded"] and zipped["headers"]["Content-Encoding"] == "gzip"
    assert _body(zipped) == plain["body"]
    again = _call("GET", "/dashboard/app.js", headers={"if-none-match": plain["headers"]["ETag"]})
    assert again["statusCode"] == 304 and not again.get("body")


@pytest.mark.parametrize(
    "name",
    ["..%2Fhandler.py", "handler.py", "index.html", "docs.html", "nope.js", "LICENSE.preact.txt", "..%2F..%2Fauth.py"],
)
def test_only_the_dashboards_own_files_are_served(aws, name):
    response = _call("GET", f"/dashboard/{name}")
    assert response["statusCode"] == 404
    assert json.loads(response["body"])["error"] == "not_found"


def test_the_api_reference_needs_no_key_and_loads_only_this_origins_files_under_the_same_policy(aws):
    page = _call("GET", "/docs")
    dashboard = _call("GET", "/dashboard")

    assert page["statusCode"] == 200 and page["headers"]["Content-Type"] == "text/html; charset=utf-8"
    assert page["headers"]["Content-Security-Policy"] == dashboard["headers"]["Content-Security-Policy"]
    html = _body(page)
    assert "<script>" not in html and "style=" not in html and "//" not in html.replace("<!doctype", "")
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "api-docs.js"):
        assert f'"dashboard/{name}"' in html
        served = _call("GET", f"/dashboard/{name}")
        assert served["statusCode"] == 200, name
    assert 'url: "v1/openapi.json"' in _call("GET", "/dashboard/api-docs.js")["body"]
    assert "validatorUrl: null" in _call("GET", "/dashboard/api-docs.js")["body"]  # no call to swagger.io


def test_the_page_never_renders_html_from_data():
    sources = [path.read_text() for path in (bundling.ROOT / bundling.DASHBOARD_ENTRY).parent.glob("*.js")]
    assert sources and not any(
        marker in source for source in sources for marker in ("innerHTML", "dangerouslySetInnerHTML", "eval(")
    )


def test_operator_routes_take_operator_keys_only(aws):
    tenant_key = tenants.create_key("acme")
    operator_key = operators.create_key("tests")
    assert _call("GET", "/operator/v1/queues", tenant_key)["statusCode"] == 401
    assert _call("GET", "/operator/v1/queues")["statusCode"] == 401
    assert _call("GET", "/v1/schedules", operator_key)["statusCode"] == 401
    aws["sqs"].send_message(QueueUrl=aws["dlq_url"], MessageBody="{}")
    response = _call("GET", "/operator/v1/queues", operator_key)
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert body["dlq"]["depth"] == 1 and body["queue"]["depth"] == 0
    assert set(body["workers"]) >= {"concurrent_executions", "errors", "throttles", "max_concurrency"}


def test_a_revoked_operator_key_stops_working(aws):
    operator_key = operators.create_key("tests")
    assert operators.is_operator(operator_key)
    operators.revoke_key(operator_key)
    assert not operators.is_operator(operator_key)


def test_the_code_asset_carries_the_bundle_and_not_the_sources():
    code = bundling.code_dir()
    build = code / bundling.DASHBOARD_BUILD
    bundle = (build / "app.js").read_text()
    assert len(bundle) > 50_000 and "import " not in bundle[:200]  # preact, uPlot, cronstrue inside
    assert ".uplot" in (build / "app.css").read_text()
    assert (build / "LICENSE.preact.txt").read_text().startswith("The MIT License")
    assert not (code / bundling.DASHBOARD_ENTRY).exists()


NOW = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "zone", "expected"),
    [
        ("cron(0 9 ? * MON-FRI *)", "Europe/Paris", ["2026-12-04T08:00:00+00:00", "2026-12-07T08:00:00+00:00"]),
        ("cron(0 12 ? * 6#3 *)", "UTC", ["2026-12-18T12:00:00+00:00", "2027-01-15T12:00:00+00:00"]),
        ("cron(0 0 L * ? *)", "UTC", ["2026-12-31T00:00:00+00:00", "2027-01-31T00:00:00+00:00"]),
        ("rate(5 minutes)", "UTC", ["2026-12-03T08:03:30+00:00", "2026-12-03T08:08:30+00:00"]),
        ("at(2026-12-31T23:59:00)", "America/New_York", ["2027-01-01T04:59:00+00:00"]),
        ("at(2026-01-01T00:00:00)", "UTC", []),
        ("cron(0 0 1 1 ? 2030)", "UTC", ["2030-01-01T00:00:00+00:00"]),
    ],
)
def test_next_firings_follow_eventbridge_scheduler(expression, zone, expected):
    anchor = datetime(2026, 12, 3, 7, 58, 30, tzinfo=UTC)
    firings = next_firings(expression, zone, after=NOW, anchor=anchor, count=2)
    assert [when.isoformat() for when in firings] == expected


def test_next_firings_stop_at_the_end_and_are_unknown_for_nearest_weekday():
    end = datetime(2026, 12, 3, 8, 20, tzinfo=UTC)
    firings = next_firings("cron(0/15 * * * ? *)", "UTC", after=NOW, anchor=NOW, count=5, end=end)
    assert [when.minute for when in firings] == [15]
    assert next_firings("cron(0 0 15W * ? *)", "UTC", after=NOW, anchor=NOW) is None
