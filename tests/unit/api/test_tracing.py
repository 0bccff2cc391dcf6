"""One job's trace: the API request's trace header travels in the message (SQS's AWSTraceHeader) and
both functions log its id, so the API's request line and the worker's batch line of one job share it."""

from __future__ import annotations

import json
import sys

import pytest

from local.events import FakeLambdaContext, http_api_event
from shared.aws import tracing
from shared.tenants import tenants
from tests.unit import worker_harness


def _log_lines(out: str, message: str) -> list[dict]:
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("message") == message]


def test_a_header_names_its_trace_and_a_fresh_root_is_x_rays_format():
    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    assert tracing.trace_id(header) == "1-5759e988-bd862e3fe1be46a994272793"
    assert tracing.trace_id("Parent=53995c3f42cd8ad8") is None
    assert tracing.trace_id(None) is None
    fresh = tracing.new_root_header()
    assert tracing.trace_id(fresh) and fresh.endswith(";Sampled=0")
    assert tracing.trace_id(tracing.new_root_header()) != tracing.trace_id(fresh)


def test_the_api_takes_lambdas_trace_when_it_traces(monkeypatch: pytest.MonkeyPatch):
    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    monkeypatch.setenv(tracing.TRACE_HEADER_VARIABLE, header)
    assert tracing.begin_request() == header
    assert tracing.message_system_attributes() == {"AWSTraceHeader": {"DataType": "String", "StringValue": header}}


def test_one_jobs_api_line_and_worker_line_share_its_trace_id(
    aws, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    from functions.api import handler as api
    from functions.worker import handler as worker

    # Each function's logger took the stdout of the moment it was first imported: this test's, now.
    for function in (api, worker):
        for log_handler in function.logger._logger.handlers:
            monkeypatch.setattr(log_handler, "stream", sys.stdout)
    handler = api.handler

    key = tenants.create_key("acme")
    answer = handler(http_api_event("POST", "/v1/jobs", {"type": "echo"}, key), FakeLambdaContext())
    assert answer["statusCode"] == 202
    (request_line,) = _log_lines(capsys.readouterr().out, "request")
    trace = request_line["trace_id"]
    assert trace and trace == tracing.trace_id(tracing.current_header())

    batch = worker_harness.poll(aws)
    assert batch is not None and batch.failed == []
    (batch_line,) = _log_lines(capsys.readouterr().out, "batch")
    assert batch_line["trace_ids"] == [trace]

    # The next request is a trace of its own.
    handler(http_api_event("POST", "/v1/jobs", {"type": "echo"}, key), FakeLambdaContext())
    (next_line,) = _log_lines(capsys.readouterr().out, "request")
    assert next_line["trace_id"] != trace


def test_outside_lambda_nothing_loads_the_x_ray_sdk(monkeypatch: pytest.MonkeyPatch):
    def handler(event: dict, context: object) -> dict:
        return event

    monkeypatch.delenv("LAMBDA_TASK_ROOT", raising=False)
    assert tracing.capture_handler("corral-api")(handler) is handler
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")  # the local profile's functions
    assert tracing.capture_handler("corral-api")(handler) is handler
    assert "aws_xray_sdk" not in sys.modules
