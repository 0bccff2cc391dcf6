"""One job followed through the stack by its trace id: the API request that enqueued it and the worker
batch that ran it log the same id, carried in the message's AWSTraceHeader (shared/aws/tracing.py).

Read from the functions' CloudWatch log groups, so it needs AWS access (the embedded stack has it).
"""

from __future__ import annotations

import json
import time
from typing import Any

from shared import settings
from tests.e2e.helpers import eventually

LOGS_ARRIVE_WITHIN_SECONDS = 30  # a bound on the wait: log lines reach CloudWatch Logs after they are written


def _log_group(deployed: Any, function: str) -> str:
    configuration = deployed.aws("lambda").get_function_configuration(FunctionName=function)
    return configuration.get("LoggingConfig", {}).get("LogGroup") or f"/aws/lambda/{function}"


def _json_lines(deployed: Any, function: str, since: float, pattern: str) -> list[dict[str, Any]]:
    events = deployed.aws("logs").filter_log_events(
        logGroupName=_log_group(deployed, function), filterPattern=pattern, startTime=int(since * 1000)
    )["events"]
    lines = []
    for event in events:
        try:
            line = json.loads(event["message"])
        except ValueError:
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


def test_one_jobs_api_line_and_worker_line_carry_the_same_trace_id(deployed, api):
    deployed.require_aws()
    since = time.time() - 1
    job_id = api.enqueue("echo", {"traced": True})
    api.wait(job_id)

    def enqueue_lines() -> list[dict[str, Any]]:
        lines = _json_lines(deployed, settings.API_FUNCTION, since, '"request"')
        return [line for line in lines if line.get("path") == "/v1/jobs" and line.get("status") == 202]

    enqueued = eventually(
        enqueue_lines, timeout=LOGS_ARRIVE_WITHIN_SECONDS, interval=1, message="the API's line of the enqueue"
    )
    assert len(enqueued) == 1, enqueued  # this test's one enqueue since it began
    trace_id = enqueued[0]["trace_id"]
    assert trace_id and trace_id.startswith("1-")

    def batches_with_the_trace() -> list[dict[str, Any]]:
        lines = _json_lines(deployed, settings.WORKER_FUNCTION, since, '"batch"')
        return [line for line in lines if trace_id in (line.get("trace_ids") or [])]

    eventually(
        batches_with_the_trace,
        timeout=LOGS_ARRIVE_WITHIN_SECONDS,
        interval=1,
        message=f"a worker batch line carrying trace {trace_id}",
    )
    # Each poll of the job was a request of its own, with a trace of its own.
    polls = [
        line
        for line in _json_lines(deployed, settings.API_FUNCTION, since, '"request"')
        if job_id in line.get("path", "")
    ]
    assert polls and all(line["trace_id"] != trace_id for line in polls)
