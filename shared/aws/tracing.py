"""Trace context: one job followed from its API call through the queue to the worker's run.

Each API request has a trace header, `Root=1-<time>-<random>;Parent=…;Sampled=…`: Lambda's own under
active tracing (the `_X_AMZN_TRACE_ID` variable it sets per invocation), or a fresh root where
nothing traces (tests, an emulator without tracing). Every message the API sends carries it in SQS's
`AWSTraceHeader` system attribute; SQS hands it to the worker in the record's attributes, and X-Ray
links the worker's trace to the API's. Both functions log the trace id (`trace_id` on the API's
request line, `trace_ids` on the worker's batch line), so the two lines of one job are found by it
in the logs too, X-Ray or not. A schedule's firing starts its own trace (Scheduler sends it).

Powertools' Tracer (the X-Ray SDK: a subsegment per AWS call) runs only where X-Ray is on: inside
Lambda, unless POWERTOOLS_TRACE_DISABLED is true (the local profile sets it). Elsewhere the SDK is not
even imported: its recorder makes a botocore client at import (docs/decisions/tracing.md).
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

# Set by Lambda for each invocation under active tracing (and by ministack); never a FunctionEnv field.
TRACE_HEADER_VARIABLE = "_X_AMZN_TRACE_ID"
SQS_TRACE_ATTRIBUTE = "AWSTraceHeader"  # SQS's system attribute for X-Ray's header
_ROOT = re.compile(r"(?:^|;)\s*Root=(1-[0-9a-f]{8}-[0-9a-f]{24})")

Handler = TypeVar("Handler", bound=Callable[..., Any])

_request_header: str | None = None


def new_root_header() -> str:
    """A trace header starting a trace, in X-Ray's format, not sampled (nothing records it)."""
    return f"Root=1-{int(time.time()):08x}-{secrets.token_hex(12)};Sampled=0"


def begin_request() -> str:
    """The API request being answered: its trace header from now on (Lambda's, or a fresh root)."""
    global _request_header
    _request_header = os.environ.get(TRACE_HEADER_VARIABLE) or new_root_header()
    return _request_header


def current_header() -> str | None:
    """What messages sent now carry: the API request's header, else this invocation's, if traced."""
    return _request_header or os.environ.get(TRACE_HEADER_VARIABLE)


def trace_id(header: str | None) -> str | None:
    """The trace's id (`1-5f1e…-…`), the part of a header that every hop shares."""
    found = _ROOT.search(header or "")
    return found.group(1) if found else None


def message_system_attributes() -> dict[str, dict[str, str]]:
    """SendMessage's MessageSystemAttributes carrying the current trace, or none outside a trace."""
    header = current_header()
    return {SQS_TRACE_ATTRIBUTE: {"DataType": "String", "StringValue": header}} if header else {}


def record_trace_id(record: Mapping[str, Any]) -> str | None:
    """The trace id a Lambda SQS event record carries (the sender's), if any."""
    return trace_id((record.get("attributes") or {}).get(SQS_TRACE_ATTRIBUTE))


def xray_is_on() -> bool:
    """Whether X-Ray records here: inside Lambda (LAMBDA_TASK_ROOT) and not turned off."""
    disabled = os.environ.get("POWERTOOLS_TRACE_DISABLED", "false").strip().lower() in ("1", "true", "yes")
    return bool(os.environ.get("LAMBDA_TASK_ROOT")) and not disabled


def capture_handler(service: str) -> Callable[[Handler], Handler]:
    """Powertools' Tracer around a Lambda handler where X-Ray is on (its AWS calls as subsegments), and
    nothing elsewhere. Responses are not captured: they hold tenants' data."""

    def decorate(handler: Handler) -> Handler:
        if not xray_is_on():
            return handler
        from aws_lambda_powertools import Tracer  # the X-Ray SDK: only where it records

        tracer = Tracer(service=service, patch_modules=("botocore",))
        return tracer.capture_lambda_handler(handler, capture_response=False)  # type: ignore[return-value]

    return decorate
