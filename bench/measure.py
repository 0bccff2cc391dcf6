"""What the benchmark reads back from the platform: queue depth over time, job records, worker batches."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import settings

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "cdk.out" / f"{settings.STACK_NAME}.template.json"
# AWS namespaces in the template that are plumbing of a component, not components.
_PLUMBING = {"IAM", "Logs", "CDK"}


@dataclass(frozen=True)
class DepthSample:
    at: float  # seconds since the load started
    visible: int
    in_flight: int


class QueueDepth:
    """Samples the jobs queue's depth every `interval` seconds on a thread until stopped."""

    def __init__(self, sqs: Any, queue_url: str, started: float, interval: float = 0.5) -> None:
        self._sqs, self._url, self._started, self._interval = sqs, queue_url, started, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.samples: list[DepthSample] = []

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def latest(self) -> DepthSample | None:
        return self.samples[-1] if self.samples else None

    def _run(self) -> None:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        while not self._stop.is_set():
            try:
                got = self._sqs.get_queue_attributes(QueueUrl=self._url, AttributeNames=names)["Attributes"]
                self.samples.append(
                    DepthSample(time.monotonic() - self._started, int(got[names[0]]), int(got[names[1]]))
                )
            except Exception:  # a sample missed under load is a gap in the plot, not a failed run
                pass
            self._stop.wait(self._interval)


@dataclass(frozen=True)
class JobRow:
    id: str
    status: str
    attempts: int
    enqueued_at: float | None
    started_at: float | None
    finished_at: float | None


def job_rows(dynamodb: Any) -> dict[str, JobRow]:
    """Every job record in the table (a scan; fine for a benchmark's few tens of thousands)."""
    rows: dict[str, JobRow] = {}
    scan: dict[str, Any] = {
        "TableName": settings.TABLE_NAME,
        "FilterExpression": "begins_with(pk, :job)",
        "ExpressionAttributeValues": {":job": {"S": "job#"}},
        "ProjectionExpression": "pk, #status, attempts, enqueued_at, started_at, finished_at",
        "ExpressionAttributeNames": {"#status": "status"},
    }
    while True:
        page = dynamodb.scan(**scan)
        for item in page["Items"]:
            job_id = item["pk"]["S"].removeprefix("job#")
            rows[job_id] = JobRow(
                id=job_id,
                status=item["status"]["S"],
                attempts=int(item.get("attempts", {"N": "0"})["N"]),
                enqueued_at=_number(item, "enqueued_at"),
                started_at=_number(item, "started_at"),
                finished_at=_number(item, "finished_at"),
            )
        if "LastEvaluatedKey" not in page:
            return rows
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _number(item: dict[str, Any], name: str) -> float | None:
    return float(item[name]["N"]) if name in item else None


@dataclass(frozen=True)
class Batch:
    """One worker invocation, from the worker's own `batch` log line."""

    environment: str  # the execution environment (its log stream on AWS; its process locally)
    started_at: float  # epoch seconds
    busy_ms: float
    size: int
    record_ms: tuple[float, ...] = ()  # each record's handling time, in the order handled


def _log_lines(logs: Any, log_group: str, since_epoch: float, pattern: str) -> list[dict[str, Any]]:
    """The function's JSON log lines matching `pattern`, paged by time (FilterLogEvents returns <= 10,000)."""
    lines: dict[str, dict[str, Any]] = {}
    start_ms = int(since_epoch * 1000)
    while True:
        events = logs.filter_log_events(
            logGroupName=log_group, filterPattern=pattern, startTime=start_ms, limit=10_000
        )["events"]
        for event in events:
            try:
                line = json.loads(event["message"])
            except ValueError:
                continue
            if isinstance(line, dict):
                # The next page starts where this one ended: the same event may come twice.
                key = f"{event.get('logStreamName')}:{event.get('eventId') or event['timestamp']}:{event['message']}"
                lines[key] = line
        if len(events) < 10_000:
            return list(lines.values())
        start_ms = events[-1]["timestamp"]


def worker_batches(logs: Any, log_group: str, since_epoch: float) -> list[Batch]:
    """The worker's batch lines (one per invocation)."""
    batches = {
        f"{line.get('function_request_id')}:{line['started_at']}": Batch(
            line["environment"], line["started_at"], line["busy_ms"], line["size"], tuple(line.get("record_ms", ()))
        )
        for line in _log_lines(logs, log_group, since_epoch, '"busy_ms"')
        if "busy_ms" in line
    }
    return list(batches.values())


def hand_backs(logs: Any, log_group: str, since_epoch: float) -> dict[str, int]:
    """The worker's hand-backs (a delivery left on the queue to come back later), counted by reason."""
    reasons = [
        str(line.get("reason", "")).split(":")[0]
        for line in _log_lines(logs, log_group, since_epoch, '"handed back"')
        if line.get("message") == "handed back"
    ]
    return {reason: reasons.count(reason) for reason in sorted(set(reasons), key=reasons.count, reverse=True)}


def footprint() -> dict[str, Any]:
    """Deployed component kinds: the AWS services among the synthesized template's resources."""
    if not TEMPLATE.exists():
        return {"components": None, "kinds": [], "source": f"{TEMPLATE} not found (run `make synth`)"}
    resources = json.loads(TEMPLATE.read_text()).get("Resources", {}).values()
    services = {resource["Type"].split("::")[1] for resource in resources if "::" in resource["Type"]}
    kinds = sorted(services - _PLUMBING)
    return {"components": len(kinds), "kinds": kinds, "source": str(TEMPLATE.relative_to(ROOT))}
