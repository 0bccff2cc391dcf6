"""The three systems `make compare` runs the timeline against, each a bench.scenarios.run.RunContext.

What differs between them is said here once, in each system's terms: how a job is enqueued, how its
record is read back, which processes run its jobs (the `kill` ends one of them), what a cron is, how
its consumers are paused, how many times each job ran and had its outcome written. The timeline, the
faults' timing, the load and every figure are bench/'s, shared.

- corral: as `make up` deploys it; its own records, its runs are its attempts (each run takes a claim,
  or is recorded as attempt 1 when it ran without one during a store blip).
- bare: bench/compare/bare; a record per job written by the worker, one log line per run.
- celery: bench/compare/celery_app.py's worker (prefork, 8 processes: the total concurrency of
  corral's 8 worker environments) and celery_load.py's load generator, both in the Celery venv; its
  result table, one log line per run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

from bench.compare import celery_venv, names
from bench.lib import measure
from bench.lib.load import Phases, Sample
from bench.scenarios.run import Load, RunContext
from local.ministack import worker_pids
from shared import settings
from shared.aws import eventbridge

ROOT = Path(__file__).resolve().parents[2]
FINAL = ("succeeded", "dead")
CELERY_CONCURRENCY = settings.WORKER_MAX_CONCURRENCY  # processes, each running one task at a time
CELERY_START_SECONDS = 3.0  # the load generator's start (import, connections) before its time 0
_RAN = re.compile(r"\bran ([\w-]+)")


def writes_by_item(writes: list[dict[str, Any]], counts_as_outcome: Any) -> dict[str, int]:
    """The fault proxy's successful writes (`/_faults/writes`) -> outcome writes per item key."""
    counted: Counter[str] = Counter()
    for write in writes:
        if counts_as_outcome(write):
            counted[write["pk"]] += write["count"]
    return dict(counted)


def celery_task_id(key: str) -> str:
    """The task id in Celery's result key: `celery-task-meta-<id>` (Celery 5.7 stores it as the text
    of the bytes, `b'celery-task-meta-<id>'`)."""
    return key.removeprefix("b'").removesuffix("'").removeprefix("celery-task-meta-")


def celery_row(item: dict[str, Any]) -> measure.JobRow:
    """A Celery result item as the benchmark's job row: its status, and the times the task returned."""
    meta = json.loads(item["result"]["B"])
    result = meta.get("result") if isinstance(meta.get("result"), dict) else {}
    done = meta.get("date_done")
    return measure.JobRow(
        id=meta.get("task_id") or celery_task_id(item["id"]["S"]),
        status={"SUCCESS": "succeeded", "FAILURE": "dead"}.get(meta.get("status"), str(meta.get("status")).lower()),
        attempts=1,
        enqueued_at=result.get("enqueued_at"),
        started_at=result.get("started_at"),
        finished_at=datetime.fromisoformat(done).timestamp() if done else None,
        schedule=result.get("schedule"),
    )


def runs_in_log_lines(lines: list[str]) -> dict[str, int]:
    """How many times each job ran, from its system's `ran <id>` lines."""
    return dict(Counter(match.group(1) for line in lines if (match := _RAN.search(line))))


@dataclass
class System(RunContext):
    """One system under comparison: RunContext's methods say how it enqueues, runs and records."""

    name: str = "corral"
    note: str = ""  # what the output says about how it stands in
    queue_name: str = settings.QUEUE_NAME
    table: str = settings.TABLE_NAME
    extra_cpu_seconds: float = 0.0  # CPU of processes that ended before it could be read (load generators)

    def queue_url(self) -> str:
        return self.aws("sqs").get_queue_url(QueueName=self.queue_name)["QueueUrl"]

    def pause(self) -> None:
        """Stop taking jobs (another system's turn, or a backlog being placed)."""
        self._mapping(enabled=False)

    def resume(self) -> None:
        self._mapping(enabled=True)

    def stop(self) -> None:
        self.pause()

    def _mapping(self, enabled: bool, function: str = settings.WORKER_FUNCTION) -> None:
        lambda_ = self.aws("lambda")
        for mapping in lambda_.list_event_source_mappings(FunctionName=function)["EventSourceMappings"]:
            lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=enabled)
        if not enabled:
            time.sleep(3)  # the mapping's pollers stop (bench/scenarios/drain.py)

    def process_groups(self) -> dict[str, list[int]]:
        """Its own processes, by group (the emulator, the sidecars and the load generator are added by the run)."""
        return {
            "worker environments": worker_pids(self.chaos.emulator, settings.WORKER_FUNCTION),
            "API environments": worker_pids(self.chaos.emulator, settings.API_FUNCTION),
        }

    def runs(self, rows: dict[str, measure.JobRow], since_epoch: float) -> dict[str, int]:
        return {job_id: row.attempts for job_id, row in rows.items()}

    def outcome_writes(self) -> dict[str, int]:
        """Outcome writes the store accepted, per job id: a claim sets `running`; an outcome `succeeded` or `dead`."""
        writes = _store_writes(self, self.table)
        counted = writes_by_item(writes, lambda write: write["sets_status"] in FINAL)
        return {pk.removeprefix("job#"): n for pk, n in counted.items()}

    def place_backlog(self, jobs: int) -> list[str]:
        """`jobs` echo jobs on the queue while the consumers are paused (bench/scenarios/drain.py's bulk enqueue)."""
        ids: list[str] = []
        headers = {"Authorization": f"Bearer {self.api_key}"}
        for first in range(0, jobs, settings.MAX_BATCH_JOBS):
            batch = [{"type": "echo", "payload": {"n": n}} for n in range(first, min(jobs, first + 100))]
            answer = requests.post(f"{self.api_url}/v1/jobs:batch", json={"jobs": batch}, headers=headers, timeout=30)
            answer.raise_for_status()
            ids += [result["id"] for result in answer.json()["results"] if "id" in result]
        return ids


def _store_writes(system: RunContext, table: str) -> list[dict[str, Any]]:
    """Both fault injectors' logs: the status cache's (corral's job items) and the fault proxy's (the rest)."""
    found: list[dict[str, Any]] = []
    for url in (system.chaos.proxy_url, system.chaos.cache_url):
        found += requests.get(f"{url}/_faults/writes", params={"table": table}, timeout=30).json()
    return found


@dataclass
class BareSystem(System):
    """bench/compare/bare: the same API and worker shape, no guarantees."""

    bare_api_url: str = ""
    bare_api_key: str = ""

    @property
    def api_url(self) -> str:
        return self.bare_api_url

    @property
    def api_key(self) -> str:
        return self.bare_api_key

    def job_rows(self) -> dict[str, measure.JobRow]:
        return measure.job_rows(self.aws("dynamodb"), table=self.table)

    def worker_pids(self) -> list[int]:
        return worker_pids(self.chaos.emulator, names.BARE_WORKER_FUNCTION)

    def environments(self) -> dict[str, int]:
        return {name: len(pids) for name, pids in self.process_groups().items()}

    def process_groups(self) -> dict[str, list[int]]:
        return {
            "worker environments": worker_pids(self.chaos.emulator, names.BARE_WORKER_FUNCTION),
            "API environments": worker_pids(self.chaos.emulator, names.BARE_API_FUNCTION),
        }

    def _mapping(self, enabled: bool, function: str = names.BARE_WORKER_FUNCTION) -> None:
        super()._mapping(enabled, function)

    def create_crons(self, prefix: str, count: int, due: datetime) -> float | None:
        """At() schedules whose firing is a bare message on the bare queue (its id: the schedule's name)."""
        sqs, scheduler = self.aws("sqs"), self.aws("scheduler")
        arn = sqs.get_queue_attributes(QueueUrl=self.queue_url(), AttributeNames=["QueueArn"])["Attributes"]
        role = self.aws("iam").get_role(RoleName=settings.SCHEDULER_ROLE_NAME)["Role"]["Arn"]
        started = time.monotonic()
        for index in range(count):
            name = f"{prefix}-{index:05d}"
            message = {"id": name, "type": "echo", "payload": {"herd": index}, "schedule": name}
            scheduler.create_schedule(
                Name=name,
                ScheduleExpression=eventbridge.at_expression(due),
                FlexibleTimeWindow={"Mode": "OFF"},
                ActionAfterCompletion="DELETE",
                Target={"Arn": arn["QueueArn"], "RoleArn": role, "Input": json.dumps(message)},
            )
        return count / (time.monotonic() - started)

    def runs(self, rows: dict[str, measure.JobRow], since_epoch: float) -> dict[str, int]:
        lines = measure.log_lines(self.aws("logs"), f"/aws/lambda/{names.BARE_WORKER_FUNCTION}", since_epoch, '"ran"')
        return runs_in_log_lines([f"ran {line['ran']}" for line in lines if "ran" in line])

    def outcome_writes(self) -> dict[str, int]:
        counted = writes_by_item(_store_writes(self, self.table), lambda write: write["operation"] == "PutItem")
        return {pk.removeprefix("job#"): n for pk, n in counted.items()}

    def place_backlog(self, jobs: int) -> list[str]:
        """Straight onto the queue, as the bare API would send them (it has no bulk enqueue)."""
        sqs, url = self.aws("sqs"), self.queue_url()
        ids = [f"backlog{time.time_ns()}-{n}" for n in range(jobs)]
        for first in range(0, jobs, 10):
            entries = [
                {"Id": str(n), "MessageBody": json.dumps({"id": job_id, "type": "echo", "payload": {"n": n}})}
                for n, job_id in enumerate(ids[first : first + 10])
            ]
            sqs.send_message_batch(QueueUrl=url, Entries=entries)
        return ids


@dataclass
class CelerySystem(System):
    """Celery workers as local processes, its load generator a process of the Celery venv."""

    state_dir: Path = ROOT / ".corral" / "compare"
    worker: subprocess.Popen[bytes] | None = None
    crons: dict[str, Any] | None = None  # the herd's, sent by the next load (celery beat's part)
    python: Path = field(default_factory=lambda: celery_venv.VENV / "bin" / "python")

    @property
    def log_path(self) -> Path:
        return self.state_dir / "celery-worker.log"

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            **self.platform.aws_env,
            "COMPARE_SQS_ENDPOINT": self.chaos.emulator,
            "COMPARE_DYNAMODB_ENDPOINT": self.chaos.proxy_url,  # a store blip reaches its result writes
            "PYTHONPATH": str(ROOT),
        }

    def start(self) -> None:
        """Start the worker (`celery worker -c 8`, prefork) and wait for its processes."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        command = [str(self.python), "-m", "celery", "-A", "bench.compare.celery_app", "worker"]
        command += ["-c", str(CELERY_CONCURRENCY), "-P", "prefork", "--without-gossip", "--without-mingle"]
        command += ["--without-heartbeat", "--logfile", str(self.log_path), "-n", "compare@%h"]
        with (self.state_dir / "celery-worker.out").open("ab") as out:
            self.worker = subprocess.Popen(
                command, cwd=ROOT, env=self.environment(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 60
        while len(self.worker_pids()) < CELERY_CONCURRENCY and time.monotonic() < deadline:
            if self.worker.poll() is not None:
                raise RuntimeError(f"the Celery worker exited with {self.worker.returncode}; see {self.log_path}")
            time.sleep(0.5)
        time.sleep(2)  # its first long poll

    def stop(self) -> None:
        if self.worker is None or self.worker.poll() is not None:
            return
        group = os.getpgid(self.worker.pid)
        os.killpg(group, signal.SIGTERM)  # a warm shutdown
        try:
            self.worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(group, signal.SIGKILL)
            self.worker.wait(timeout=5)

    def pause(self) -> None:
        """Stopped, not ended: SIGSTOP the worker's processes (its open long poll's answer waits in its socket)."""
        self._signal_all(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal_all(signal.SIGCONT)

    def _signal_all(self, signum: int) -> None:
        if self.worker is not None and self.worker.poll() is None:
            os.killpg(os.getpgid(self.worker.pid), signum)

    def worker_pids(self) -> list[int]:
        """The pool's processes (each runs tasks; the main process only fetches and hands them out)."""
        return _children(self.worker.pid) if self.worker else []

    def environments(self) -> dict[str, int]:
        return {"celery pool processes": len(self.worker_pids())}

    def process_groups(self) -> dict[str, list[int]]:
        main = [self.worker.pid] if self.worker else []
        return {"celery worker (main + pool)": main + self.worker_pids()}

    def new_load(self, phases: Phases, threads: int) -> Load:
        crons, self.crons = self.crons, None
        return CeleryLoad(self, {"phases": [list(phase) for phase in phases], "threads": threads, "crons": crons})

    def create_crons(self, prefix: str, count: int, due: datetime) -> float | None:
        """Nothing to create: celery beat's part is the next load's, which sends them at the due second."""
        self.crons = {"prefix": prefix, "count": count, "due_epoch": due.timestamp()}
        return None

    def job_rows(self) -> dict[str, measure.JobRow]:
        rows = {}
        for page in self.aws("dynamodb").get_paginator("scan").paginate(TableName=self.table):
            for item in page["Items"]:
                row = celery_row(item)
                rows[row.id] = row
        return rows

    def runs(self, rows: dict[str, measure.JobRow], since_epoch: float) -> dict[str, int]:
        return runs_in_log_lines(self.log_path.read_text(errors="replace").splitlines())

    def outcome_writes(self) -> dict[str, int]:
        counted = writes_by_item(_store_writes(self, self.table), lambda write: write["operation"] == "PutItem")
        return {celery_task_id(key): n for key, n in counted.items()}

    def place_backlog(self, jobs: int) -> list[str]:
        return CeleryLoad(self, {"backlog": jobs, "threads": 1}).run_now()["backlog"]


def _children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


class CeleryLoad:
    """bench.scenarios.run's Load for Celery: bench/compare/celery_load.py in the Celery venv, started so that its
    schedule's time 0 is CELERY_START_SECONDS from now; its samples are read back when it ends."""

    def __init__(self, system: CelerySystem, spec: dict[str, Any]) -> None:
        self._system, self._spec = system, spec
        self.samples: list[Sample] = []
        self.skipped: dict[str, int] = {}
        self.started = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._files = tempfile.TemporaryDirectory(prefix="celery-load-")

    def start(self) -> None:
        self.started = time.monotonic() + CELERY_START_SECONDS
        spec_path = Path(self._files.name) / "spec.json"
        spec_path.write_text(json.dumps({**self._spec, "start_at": self.started}))
        command = [str(self._system.python), "-m", "bench.compare.celery_load", str(spec_path), self._out]
        self._process = subprocess.Popen(command, cwd=ROOT, env=self._system.environment())

    @property
    def _out(self) -> str:
        return str(Path(self._files.name) / "out.json")

    def join(self) -> None:
        assert self._process is not None
        if self._process.wait() != 0:
            raise RuntimeError(f"the Celery load generator exited with {self._process.returncode}")
        out = json.loads(Path(self._out).read_text())
        self.samples = [Sample(**sample) for sample in out["samples"]]
        self.skipped = out["skipped"]
        self._system.extra_cpu_seconds += out["cpu_seconds"]
        self._files.cleanup()

    def run_now(self) -> dict[str, Any]:
        """Run it to its end (a backlog): what it wrote."""
        self.start()
        assert self._process is not None
        self._process.wait()
        out: dict[str, Any] = json.loads(Path(self._out).read_text())
        self._system.extra_cpu_seconds += out["cpu_seconds"]
        self._files.cleanup()
        return out
