"""Priority lanes, measured: does a high job start as promptly behind a backlog of low jobs as on an idle system?

    make priorities                      # 30 high jobs idle, then 30 behind a backlog of 2,000 low jobs
    make priorities ARGS="--backlog 500" # a smaller backlog (a smoke run)

Starts its own embedded stack on --port (ministack + cdk deploy), with a tenant of its own (no running cap):
- idle: --high `echo` jobs with `"priority": "high"`, one every --gap seconds, on an otherwise idle system;
- backlog: --backlog `sleep` jobs of --low-job-seconds with `"priority": "low"` (POST /v1/jobs:batch, 100 a request),
  then, once they are all queued, --high more high jobs at the same pace while the low lane drains.
Reports (definitions: docs/benchmark.md "Priority lanes"):
- the high jobs' enqueue-to-run p50/p90/p99 idle and behind the backlog; the goal: the p90 behind the backlog
  <= max(3x the idle p90, 1 s);
- how many low jobs were still waiting when the last high job started (the backlog the high jobs passed);
- jobs accepted (202) that never succeeded once the backlog drained: lost (goal: 0).
Figures go to stdout and .corral/priorities.json.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from bench.lib import measure, report
from bench.lib.slo import enqueue_to_run_ms, percentile
from bench.lib.tuning import set_limits
from bench.scenarios.noisy import p90_target_ms
from client import Corral
from local.deploy import create_api_key
from local.ministack import STATE
from local.platform import Platform, embedded_stack
from shared import settings
from shared.flow.priority import split

RESULT = STATE / "priorities.json"


@dataclass
class Report:
    backlog: int
    low_job_seconds: float
    high_jobs_per_phase: int
    lanes: dict[str, int]  # each lane's MaximumConcurrency (batches)
    high_idle_p50_ms: float | None
    high_idle_p90_ms: float | None
    high_idle_p99_ms: float | None
    high_backlog_p50_ms: float | None
    high_backlog_p90_ms: float | None
    high_backlog_p99_ms: float | None
    high_backlog_p90_target_ms: float | None
    high_backlog_p90_met: bool | None
    low_waiting_when_last_high_started: int
    low_drain_seconds: float | None
    lost: int


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _high_jobs(api: Corral, count: int, gap: float, phase: str) -> list[str]:
    ids = []
    for n in range(count):
        ids.append(api.enqueue("echo", {"phase": phase, "n": n}, priority="high"))
        time.sleep(gap)
    return ids


def run(platform: Platform, api_url: str, args: argparse.Namespace) -> Report:
    tenant = f"lanes-{uuid.uuid4().hex[:6]}"
    key = create_api_key(platform.aws_env, tenant, label="bench")
    # No running cap and room for the backlog's requests: the lanes alone decide what runs.
    set_limits(platform, tenant, rate=100_000.0, burst=100_000, max_running=0)
    api = Corral(api_url, key, timeout=30)
    dynamodb = platform.aws("dynamodb")
    api.wait(api.enqueue("echo", {"warm": True}, priority="high"), timeout=120)
    api.wait(api.enqueue("echo", {"warm": True}, priority="low"), timeout=120)

    print(f"idle: {args.high} high jobs, one every {args.gap:g} s", flush=True)
    idle_ids = _high_jobs(api, args.high, args.gap, "idle")
    idle_rows = measure.wait_until_finished(dynamodb, args.drain_timeout, ids=idle_ids)

    print(f"backlog: {args.backlog} low jobs of {args.low_job_seconds:g} s", flush=True)
    backlog_started = time.time()
    low = api.enqueue_many(
        [
            {"type": "sleep", "payload": {"seconds": args.low_job_seconds, "n": n}, "priority": "low"}
            for n in range(args.backlog)
        ]
    )
    low_ids = [outcome.id for outcome in low if outcome.id]
    print(f"  {len(low_ids)} accepted in {time.time() - backlog_started:.1f} s; now {args.high} high jobs", flush=True)
    backlog_ids = _high_jobs(api, args.high, args.gap, "backlog")
    high_rows = measure.wait_until_finished(dynamodb, args.drain_timeout, ids=backlog_ids)
    low_rows = measure.wait_until_finished(dynamodb, args.drain_timeout, ids=low_ids)

    idle = enqueue_to_run_ms(idle_ids, idle_rows)
    behind = enqueue_to_run_ms(backlog_ids, high_rows)
    idle_p90, behind_p90 = percentile(idle, 90), percentile(behind, 90)
    target = None if idle_p90 is None else p90_target_ms(idle_p90)
    last_high = max((row.started_at for row in high_rows.values() if row.started_at), default=None)
    low_started = [row.started_at for row in low_rows.values() if row.started_at]
    low_finished = [row.finished_at for row in low_rows.values() if row.finished_at]
    shares = split(settings.WORKER_MAX_CONCURRENCY)
    return Report(
        backlog=len(low_ids),
        low_job_seconds=args.low_job_seconds,
        high_jobs_per_phase=args.high,
        lanes={"high": shares.high, "default": shares.default, "low": shares.low},
        high_idle_p50_ms=_round(percentile(idle, 50)),
        high_idle_p90_ms=_round(idle_p90),
        high_idle_p99_ms=_round(percentile(idle, 99)),
        high_backlog_p50_ms=_round(percentile(behind, 50)),
        high_backlog_p90_ms=_round(behind_p90),
        high_backlog_p99_ms=_round(percentile(behind, 99)),
        high_backlog_p90_target_ms=_round(target),
        high_backlog_p90_met=None if target is None or behind_p90 is None else behind_p90 <= target,
        low_waiting_when_last_high_started=(
            len(low_ids) - sum(1 for started in low_started if started <= last_high) if last_high else len(low_ids)
        ),
        low_drain_seconds=_round(max(low_finished) - backlog_started) if low_finished else None,
        lost=sum(
            1
            for job_id in idle_ids + backlog_ids + low_ids
            if (row := {**idle_rows, **high_rows, **low_rows}.get(job_id)) is None or row.status != "succeeded"
        )
        + (args.backlog - len(low_ids)),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make priorities", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backlog", type=int, default=2_000, help="low jobs queued before the high ones")
    parser.add_argument("--low-job-seconds", type=float, default=0.2, help="how long each low job sleeps")
    parser.add_argument("--high", type=int, default=30, help="high jobs per phase (idle, behind the backlog)")
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between two high jobs")
    parser.add_argument("--drain-timeout", type=float, default=900.0, help="seconds to wait for the jobs to run")
    parser.add_argument("--port", type=int, default=4611, help="port of the scenario's own emulator")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the emulator
    with embedded_stack(args.port, STATE / "priorities", sidecars=False, announce=True) as stack:
        found = run(stack.platform, stack.endpoint.api_url, args)
    result: dict[str, Any] = asdict(found)
    report.keep_and_print(RESULT, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
