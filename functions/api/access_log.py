"""The API's access line: one JSON line per request, its path, status, trace and invocation, printed directly.

Powertools' Logger wrote it before. Building a log record, finding its caller and formatting each key cost
~0.075 ms per request, 40 % of the API's own work on an enqueue (0.18 ms, measured in-process: docs/decisions/
the-limit-and-a-peer.md "Cuts made and measured"); printed here it costs ~0.01 ms. The line keeps the keys and
the timestamp format of the Logger's line, so a query over the logs finds it as before. Every other line the
API writes (errors, exceptions) still goes through the Logger.
"""

from __future__ import annotations

import json
import time
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

SERVICE = "corral-api"

_cold_start = True  # the first request this execution environment answers


def write(event: dict[str, Any], context: LambdaContext, status: object, trace_id: str | None) -> None:
    global _cold_start
    now = time.time()
    line = {
        "level": "INFO",
        "location": "access_log",
        "message": "request",
        # The Logger's format: "2026-12-06 03:25:25,190+0000".
        "timestamp": f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(now))},{int(now % 1 * 1000):03d}+0000",
        "service": SERVICE,
        "cold_start": _cold_start,
        "function_name": context.function_name,
        "function_memory_size": context.memory_limit_in_mb,
        "function_arn": context.invoked_function_arn,
        "function_request_id": context.aws_request_id,
        "trace_id": trace_id,
        "path": event.get("rawPath"),
        "status": status,
    }
    _cold_start = False
    # Flushed at once, as the Logger's handler does: the line is out before the invocation answers.
    print(json.dumps(line, separators=(",", ":"), default=str), flush=True)
