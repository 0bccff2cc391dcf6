"""The load generator for Celery: bench/lib/load.py's open-loop schedule, each send an `apply_async`.

    python -m bench.compare.celery_load <spec.json> <out.json>      (in the Celery venv)

Started by bench/compare/systems.py for each load of the timeline. The spec holds the phases
((name, seconds, rate) each), the client threads, the schedule's time 0 (`start_at`, time.monotonic(),
shared by every process of the machine), and optionally the herd's crons (prefix, count, due epoch)
or a backlog to send at once. There is no API in front of Celery: an enqueue's latency is
apply_async's, and a send that returned counts as accepted (status 202). The crons stand in for
celery beat, which sends the tasks due at a second one after another from one process: so does a
thread here, at the due second. Writes the samples, the crons' and backlog's task ids and its own
CPU time.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.compare.celery_app import app, echo
from bench.compare.names import CELERY_QUEUE
from bench.lib.load import EnqueueLoad, Phases, rate_of_phases


class CeleryLoad(EnqueueLoad):
    def __init__(self, phases: Phases, threads: int) -> None:
        super().__init__("", "", rate_of_phases(phases), threads)

    def _session(self) -> None:
        """Each client thread's own result backend (Celery keeps one per thread; its first use builds a
        DynamoDB client and reads the table's description), set up here, before time 0, as a long-running
        producer has it. The producer pool is shared by the threads."""
        _ = app.backend

    def _enqueue(self, session: Any, number: int) -> tuple[int, str | None]:
        try:
            return 202, echo.apply_async(args=[{"n": number}, time.time()]).id
        except Exception:  # a send that failed is a job not accepted, as a 5xx is for an API
            return 0, None


def warm_producers(count: int) -> None:
    """Open the producer connections the client threads will take, each with its SQS client and the
    queue's URL, before time 0: a long-running producer (a web app's) has them open already."""
    producers = [app.producer_pool.acquire(block=True) for _ in range(min(count, app.conf.broker_pool_limit))]
    try:
        for producer in producers:
            producer.maybe_declare(app.amqp.queues[CELERY_QUEUE])
    finally:
        for producer in producers:
            producer.release()
    # The first apply_async of a process pays for setting up its publish path (~0.2 s here): one task,
    # not among the samples, takes that cost off the first measured enqueue.
    echo.apply_async(args=[{"warm": True}, time.time()], kwargs={"schedule": "warm"})


def send_crons(prefix: str, count: int, due_epoch: float) -> list[str]:
    """Celery beat's part: at the due second, every cron's task, one after another."""
    _ = app.backend  # this thread's (see CeleryLoad._session), ready before the due second
    time.sleep(max(0.0, due_epoch - time.time()))
    names = [f"{prefix}-{index:05d}" for index in range(count)]
    for index, name in enumerate(names):
        echo.apply_async(args=[{"herd": index}, due_epoch], kwargs={"schedule": name}, task_id=name)
    return names


def send_backlog(count: int) -> list[str]:
    return [echo.apply_async(args=[{"n": n}, time.time()]).id for n in range(count)]


def main(spec_path: str, out_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    out: dict[str, Any] = {"samples": [], "skipped": {}, "crons": [], "backlog": []}
    warm_producers(spec.get("threads", 1))
    if spec.get("backlog"):
        out["backlog"] = send_backlog(spec["backlog"])
    else:
        crons = spec.get("crons")
        cron_thread = None
        if crons:
            cron_thread = threading.Thread(
                target=lambda: out.__setitem__("crons", send_crons(crons["prefix"], crons["count"], crons["due_epoch"]))
            )
            cron_thread.start()
        load = CeleryLoad([tuple(phase) for phase in spec["phases"]], spec["threads"])
        load.start(at=spec["start_at"])
        load.join()
        if cron_thread:
            cron_thread.join()
        out["samples"] = [asdict(sample) for sample in load.samples]
        out["skipped"] = load.skipped
    out["cpu_seconds"] = time.process_time()
    Path(out_path).write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
