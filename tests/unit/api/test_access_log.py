"""The API's access line: one JSON line per request with the keys the Powertools Logger's line had."""

from __future__ import annotations

import json
import re

from functions.api import access_log
from functions.api.handler import handler
from local.events import FakeLambdaContext, http_api_event
from shared.tenants import tenants

LOGGER_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\+0000")


def _request_lines(out: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("message") == "request"]


def test_each_request_prints_one_access_line_with_the_loggers_keys(aws, capsys, monkeypatch):
    monkeypatch.setattr(access_log, "_cold_start", True)
    key = tenants.create_key("acme")
    context = FakeLambdaContext()
    answered = handler(http_api_event("POST", "/v1/jobs", {"type": "echo"}, key), context)
    handler(http_api_event("GET", "/v1/nothing-here", api_key=key), context)

    first, second = _request_lines(capsys.readouterr().out)
    assert first["status"] == answered["statusCode"] == 202 and second["status"] == 404
    assert (first["path"], second["path"]) == ("/v1/jobs", "/v1/nothing-here")
    assert (first["cold_start"], second["cold_start"]) == (True, False)
    for line in (first, second):
        assert line["level"] == "INFO" and line["service"] == "corral-api"
        assert LOGGER_TIMESTAMP.fullmatch(str(line["timestamp"]))
        assert str(line["trace_id"]).startswith("1-")
        assert line["function_request_id"] == context.aws_request_id
        assert line["function_name"] == context.function_name
    assert first["trace_id"] != second["trace_id"]  # each request is a trace of its own


def test_a_request_without_a_key_is_logged_too(aws, capsys):
    handler(http_api_event("POST", "/v1/jobs", {"type": "echo"}), FakeLambdaContext())
    (line,) = _request_lines(capsys.readouterr().out)
    assert line["status"] == 401
