"""A fault proxy between the functions and the emulator's DynamoDB and SQS: store blips on demand.

Everything is forwarded to the emulator unless a fault window is open for the
request's service; then the proxy answers as the real service does when it
throttles or fails (DynamoDB's ProvisionedThroughputExceededException 400 /
InternalServerError 500 JSON bodies, SQS's RequestThrottled / InternalError),
or forwards after added latency. It also records the DynamoDB requests it sees,
so tests count real store reads and outcome writes.

Control (JSON over HTTP on the same port):
    POST /_faults/blip   {"service": "dynamodb"|"sqs", "seconds": 5, "mode": "mixed"|"throttle"|"error"|"latency",
                          "latency_ms": 200}
    POST /_faults/clear  closes every window
    GET  /_faults/stats  requests and injected faults per service and operation
    GET  /_faults/requests?pk=job%23<id>  the DynamoDB requests for one item key (bounded log)
    GET  /_faults/writes?table=<name>     the successful item writes to a table, counted by item key,
                                          operation and the status they set (bounded log)
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from local.proxy_base import Forwarder, Reply, Request, serve_main

MODES = ("mixed", "throttle", "error", "latency")
LOG_SIZE = 200_000
_STATUS_SET = re.compile(r"#status\s*=\s*(:\w+)")

_DYNAMODB_ERRORS = {
    "throttle": (
        400,
        "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "The level of configured provisioned throughput for the table was exceeded.",
    ),
    "error": (500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error"),
}
_SQS_ERRORS = {
    "throttle": (400, "com.amazonaws.sqs#RequestThrottled", "Rate exceeded"),
    "error": (500, "com.amazonaws.sqs#InternalError", "We encountered an internal error. Please try again."),
}


@dataclass(frozen=True)
class Window:
    until: float
    mode: str
    latency_ms: int


def service_of(request: Request) -> str:
    if request.target.startswith("DynamoDB_"):
        return "dynamodb"
    if request.target.startswith("AmazonSQS") or "/sqs/" in request.headers.get("Authorization", ""):
        return "sqs"
    return "other"


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        self.forward = Forwarder(upstream)
        self._windows: dict[str, Window] = {}
        self._lock = threading.Lock()
        self.stats: Counter[str] = Counter()
        self.log: deque[dict[str, Any]] = deque(maxlen=LOG_SIZE)

    def __call__(self, request: Request, body: bytes | None = None) -> Reply:
        """Answer `request`: a control order, an injected fault, or the upstream's reply (to `body` if given)."""
        if request.path.startswith("/_faults/"):
            return self._control(request)
        service = service_of(request)
        operation = request.target.rsplit(".", 1)[-1] or request.method
        window = self._open_window(service)
        injected = window is not None and window.mode != "latency"
        if window is not None and window.mode == "latency":
            time.sleep(window.latency_ms / 1000)
        reply = self._error(service, window.mode) if injected and window else self.forward(request, body)
        with self._lock:
            self.stats[f"{service}.{operation}"] += 1
            if injected:
                self.stats[f"{service}.{operation}.injected"] += 1
            if service == "dynamodb":
                self.log.append(_describe(request, operation, reply.status, injected))
        return reply

    def _open_window(self, service: str) -> Window | None:
        with self._lock:
            window = self._windows.get(service)
            if window is None or window.until < time.monotonic():
                return None
            return window

    def _error(self, service: str, mode: str) -> Reply:
        kind = random.choice(("throttle", "error")) if mode == "mixed" else mode
        status, code, message = (_DYNAMODB_ERRORS if service == "dynamodb" else _SQS_ERRORS)[kind]
        headers = {"x-amzn-query-error": f"{code.rsplit('#', 1)[-1]};Receiver"} if service == "sqs" else {}
        return Reply.of_json(status, {"__type": code, "message": message}, headers)

    def _control(self, request: Request) -> Reply:
        url = urlsplit(request.path)
        if url.path == "/_faults/blip" and request.method == "POST":
            return self._blip(request.json())
        if url.path == "/_faults/clear" and request.method == "POST":
            with self._lock:
                self._windows.clear()
            return Reply.of_json(200, {"cleared": True})
        if url.path == "/_faults/stats":
            with self._lock:
                return Reply.of_json(200, dict(self.stats))
        if url.path == "/_faults/requests":
            pk = parse_qs(url.query).get("pk", [""])[0]
            with self._lock:
                return Reply.of_json(200, [entry for entry in self.log if entry["pk"] == pk])
        if url.path == "/_faults/writes":
            table = parse_qs(url.query).get("table", [""])[0]
            with self._lock:
                return Reply.of_json(200, successful_writes(self.log, table))
        return Reply.of_json(404, {"error": "not_found", "message": f"no control endpoint {url.path}"})

    def _blip(self, order: dict[str, Any]) -> Reply:
        service, mode = order.get("service", "dynamodb"), order.get("mode", "mixed")
        if service not in ("dynamodb", "sqs") or mode not in MODES:
            return Reply.of_json(
                422, {"error": "invalid", "message": f"service must be dynamodb|sqs, mode one of {', '.join(MODES)}"}
            )
        seconds = float(order.get("seconds", 5))
        window = Window(until=time.monotonic() + seconds, mode=mode, latency_ms=int(order.get("latency_ms", 200)))
        with self._lock:
            self._windows[service] = window
        return Reply.of_json(200, {"service": service, "mode": mode, "seconds": seconds})


WRITES = ("PutItem", "UpdateItem", "DeleteItem")


def successful_writes(log: Iterable[dict[str, Any]], table: str) -> list[dict[str, Any]]:
    """The writes the store accepted to `table`'s items, counted by (item key, operation, status set):
    how many times each job's outcome was recorded (`make compare`)."""
    counts: Counter[tuple[str, str, str | None]] = Counter(
        (entry["pk"], entry["operation"], entry["sets_status"])
        for entry in log
        if entry.get("table") == table and entry["operation"] in WRITES and entry["http_status"] == 200
    )
    return [
        {"pk": pk, "operation": operation, "sets_status": status, "count": count}
        for (pk, operation, status), count in counts.items()
    ]


def _describe(request: Request, operation: str, status: int, injected: bool) -> dict[str, Any]:
    """One DynamoDB request: which item (its `pk`, or `id` as Celery's result table keys it), what it
    did, and for a write the status it sets (an update's `#status = :v`, a put's `status`)."""
    body = request.json()
    key = body.get("Key") or body.get("Item") or {}
    written_status = None
    match = _STATUS_SET.search(body.get("UpdateExpression", ""))
    if match:
        written_status = body.get("ExpressionAttributeValues", {}).get(match.group(1), {}).get("S")
    elif operation == "PutItem":
        written_status = body.get("Item", {}).get("status", {}).get("S")
    return {
        "operation": operation,
        "table": body.get("TableName", ""),
        "pk": (key.get("pk") or key.get("id") or {}).get("S", ""),
        "consistent": bool(body.get("ConsistentRead")),
        "sets_status": written_status,
        "http_status": status,
        "injected": injected,
    }


if __name__ == "__main__":
    serve_main(__doc__.splitlines()[0], lambda args: FaultProxy(args.upstream))
