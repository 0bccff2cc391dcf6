"""What the benchmark reads back from the platform: queue depth over time, job records, worker batches."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import settings

FINAL_STATUSES = ("succeeded", "dead")
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) a process has used so far, from /proc; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime


def group_cpu(
    before: Mapping[int, float], after: Mapping[int, float], groups: Mapping[str, Iterable[int]]
) -> dict[str, float]:
    """CPU seconds each group of processes used between two per-process readings. A process that
    started in between counts from 0; one gone by the second reading is not counted."""
    return {
        name: sum(after[pid] - before.get(pid, 0.0) for pid in pids if pid in after) for name, pids in groups.items()
    }


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
    schedule: str | None = None  # the schedule whose firing it is


def job_rows(dynamodb: Any, table: str = settings.TABLE_NAME) -> dict[str, JobRow]:
    """Every job record in the table (a scan; fine for a benchmark's few tens of thousands). `table`:
    another table whose job items are written as corral's are (`make compare`'s bare pipeline)."""
    rows: dict[str, JobRow] = {}
    scan: dict[str, Any] = {
        "TableName": table,
        "FilterExpression": "begins_with(pk, :job)",
        "ExpressionAttributeValues": {":job": {"S": "job#"}},
        "ProjectionExpression": "pk, #status, attempts, enqueued_at, started_at, finished_at, schedule_name",
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
                schedule=item["schedule_name"]["S"] if "schedule_name" in item else None,
            )
        if "LastEvaluatedKey" not in page:
            return rows
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def wait_until_finished(
    dynamodb: Any,
    timeout: float,
    *,
    ids: Collection[str] = (),
    schedule_prefix: str | None = None,
    expected: int = 0,
    not_before: float = 0.0,
    interval: float = 3.0,
) -> dict[str, JobRow]:
    """Every job row once the jobs waited for have all finished (succeeded or dead), or when `timeout`
    seconds pass. The jobs: `ids`, and those fired by schedules named `schedule_prefix`..., of which
    `expected` must have fired. `not_before` (epoch seconds): nothing is read before then (schedules
    due later have not fired yet)."""
    deadline = time.monotonic() + timeout
    time.sleep(max(0.0, not_before - time.time()))
    while True:
        rows = job_rows(dynamodb)
        waited_for = set(ids)
        if schedule_prefix is not None:
            waited_for |= {row.id for row in rows.values() if (row.schedule or "").startswith(schedule_prefix)}
        finished = sum(1 for job_id in waited_for if (row := rows.get(job_id)) and row.status in FINAL_STATUSES)
        wanted = max(len(waited_for), len(ids) + expected)
        if finished >= wanted or time.monotonic() > deadline:
            return rows
        print(f"  waiting: {finished}/{wanted} jobs finished", flush=True)
        time.sleep(interval)


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


def log_lines(logs: Any, log_group: str, since_epoch: float, pattern: str) -> list[dict[str, Any]]:
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
        for line in log_lines(logs, log_group, since_epoch, '"busy_ms"')
        if "busy_ms" in line
    }
    return list(batches.values())


def hand_backs(logs: Any, log_group: str, since_epoch: float) -> dict[str, int]:
    """The worker's hand-backs (a delivery left on the queue to come back later), counted by reason."""
    reasons = [
        str(line.get("reason", "")).split(":")[0]
        for line in log_lines(logs, log_group, since_epoch, '"handed back"')
        if line.get("message") == "handed back"
    ]
    return {reason: reasons.count(reason) for reason in sorted(set(reasons), key=reasons.count, reverse=True)}
