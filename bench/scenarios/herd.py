"""The midnight herd, measured: S schedules all due at the same second, while API enqueues keep coming.

    make herd ARGS="--schedules 1000"

Starts its own embedded stack (ministack + cdk deploy) on --port, creates S one-time
at() schedules in the corral schedule group (bench/lib/crons.py, through the product's own
EventBridge adapter; creation speed is not what is measured), all due at one second T, each
firing a job message exactly as a customer's schedule would. From --baseline seconds before T until the
herd has run, a steady stream of POST /v1/jobs goes at --rate per second. Reports:
- when the last fired job was in the queue (its SQS SentTimestamp) and when it had run, from T;
- enqueue-to-run of the fired jobs, from when each entered the queue;
- API enqueue latency p50/p99 before T vs during the herd (goal: p99 during <= 1.5x before);
- jobs fired vs expected, and schedules that fired more than once (goal: all, each once);
- API enqueues attempted and failed (no 202 within 10 s: a job not executed; goal: 0).
Figures go to stdout and .corral/herd.json. Keep S small on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.lib import measure
from bench.lib.crons import create_herd, herd_records
from bench.lib.load import EnqueueLoad
from bench.lib.slo import percentile
from bench.lib.tuning import limit_worker_concurrency
from client import Corral
from local.ministack import STATE
from local.platform import Platform, embedded_stack
from shared import settings

RESULT = STATE / "herd.json"


@dataclass
class Report:
    schedules: int
    api_rate_per_second: float
    worker_concurrency: int
    created_per_second: float
    due_at: str
    fired: int
    fired_more_than_once: int
    dead_letters: int
    last_in_queue_after_due_s: float | None
    last_run_after_due_s: float | None
    enqueue_to_run_p50_ms: float | None
    enqueue_to_run_p99_ms: float | None
    api_before_p50_ms: float | None
    api_before_p99_ms: float | None
    api_during_p50_ms: float | None
    api_during_p99_ms: float | None
    api_p99_ratio: float | None
    api_enqueues_attempted: int
    api_enqueues_failed: int  # no 202 within 10 s: each is a job not executed


def _rounded_percentile(values: list[float], pct: float) -> float | None:
    value = percentile(values, pct)
    return None if value is None else round(value, 1)


def dead_letters(platform: Platform) -> int:
    sqs = platform.aws("sqs")
    url = sqs.get_queue_url(QueueName=settings.DLQ_NAME)["QueueUrl"]
    return int(
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
            "ApproximateNumberOfMessages"
        ]
    )


def run(platform: Platform, api: Corral, args: argparse.Namespace) -> Report:
    prefix = f"herd-{uuid.uuid4().hex[:6]}"
    due_epoch = int(time.time() + args.lead)
    due = datetime.fromtimestamp(due_epoch, UTC)
    print(f"creating {args.schedules} schedules due at {due:%H:%M:%S} UTC ...", flush=True)
    created_per_second = create_herd(platform, prefix, args.schedules, due, args.threads)
    print(f"created at {created_per_second:.0f}/s; {due_epoch - time.time():.0f}s until due", flush=True)
    if time.time() > due_epoch - args.baseline:
        print("warning: creation ran into the baseline window; raise --lead", flush=True)

    over = threading.Event()
    stream = EnqueueLoad(api.api_url, api.api_key, lambda _: None if over.is_set() else ("herd", args.rate), threads=8)
    stream_epoch = time.time()
    stream.start()
    try:
        measure.wait_until_finished(
            platform.aws("dynamodb"),
            timeout=max(0, due_epoch - time.time()) + args.timeout,
            schedule_prefix=prefix,
            expected=args.schedules,
            not_before=due_epoch + 15,  # the emulator's tick fires up to 10 s after T
            interval=2,
        )
    finally:
        herd_over = time.time()
        over.set()
        stream.join()

    items = herd_records(platform, prefix)
    per_schedule = Counter(item["schedule_name"]["S"] for item in items)
    in_queue = [float(item["enqueued_at"]["N"]) for item in items]
    finished = [float(item["finished_at"]["N"]) for item in items if "finished_at" in item]
    to_run = [
        (float(item["started_at"]["N"]) - float(item["enqueued_at"]["N"])) * 1000
        for item in items
        if "started_at" in item
    ]
    sent = [(stream_epoch + s.at, s) for s in stream.samples]
    before = [s.latency_ms for at, s in sent if due_epoch - args.baseline <= at < due_epoch and s.status == 202]
    during = [s.latency_ms for at, s in sent if due_epoch <= at <= herd_over and s.status == 202]
    before_p99, during_p99 = _rounded_percentile(before, 99), _rounded_percentile(during, 99)
    return Report(
        schedules=args.schedules,
        api_rate_per_second=args.rate,
        worker_concurrency=args.worker_concurrency,
        created_per_second=round(created_per_second, 1),
        due_at=due.isoformat(),
        fired=len(per_schedule),
        fired_more_than_once=sum(1 for n in per_schedule.values() if n > 1),
        dead_letters=dead_letters(platform),
        last_in_queue_after_due_s=round(max(in_queue) - due_epoch, 2) if in_queue else None,
        last_run_after_due_s=round(max(finished) - due_epoch, 2) if finished else None,
        enqueue_to_run_p50_ms=_rounded_percentile(to_run, 50),
        enqueue_to_run_p99_ms=_rounded_percentile(to_run, 99),
        api_before_p50_ms=_rounded_percentile(before, 50),
        api_before_p99_ms=before_p99,
        api_during_p50_ms=_rounded_percentile(during, 50),
        api_during_p99_ms=during_p99,
        api_p99_ratio=round(during_p99 / before_p99, 2) if before_p99 and during_p99 else None,
        api_enqueues_attempted=len(stream.samples),
        api_enqueues_failed=sum(1 for s in stream.samples if s.status != 202),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schedules", type=int, default=1000, help="S: schedules due at the same second")
    parser.add_argument("--rate", type=float, default=20, help="API enqueues per second, before and during")
    parser.add_argument("--baseline", type=float, default=20, help="seconds of enqueues before the due second")
    parser.add_argument("--lead", type=float, default=0, help="seconds from start to the due second (0: derived)")
    parser.add_argument("--threads", type=int, default=8, help="threads creating schedules")
    parser.add_argument("--timeout", type=float, default=300, help="give up waiting this long after the due second")
    parser.add_argument(
        "--worker-concurrency",
        type=int,
        default=4,
        help="the worker mapping's MaximumConcurrency here (the stack's is for AWS; 2 cores cannot cold-start 50)",
    )
    parser.add_argument("--port", type=int, default=4570, help="port of the herd's own emulator")
    args = parser.parse_args()
    if not args.lead:
        # Creation runs at a few hundred per second here; leave it room, then the baseline.
        args.lead = args.schedules / 150 + args.baseline + 10

    # A SIGTERM (a timeout, Ctrl-C from make) still stops the emulator and its Lambda processes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with embedded_stack(args.port, STATE / "herd", sidecars=False, announce=True) as stack:
        platform = stack.platform
        api = stack.platform.client()
        limit_worker_concurrency(platform, args.worker_concurrency)
        api.enqueue("echo", {"warm": True})  # cold start outside the baseline
        report = run(platform, api, args)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(asdict(report), indent=2) + "\n")
    width = max(len(key) for key in asdict(report))
    for key, value in asdict(report).items():
        print(f"{key:<{width}}  {value}")
    print(f"(also in {RESULT.relative_to(Path.cwd()) if RESULT.is_relative_to(Path.cwd()) else RESULT})")


if __name__ == "__main__":
    main()
