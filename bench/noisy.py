"""The noisy neighbour, measured: does a quiet tenant's job still start promptly while another floods?

    make noisy                     # 60 s with tenant A idle, then 60 s with A flooding
    make noisy ARGS="--quick"      # 20 s + 20 s: a smoke run

Starts its own embedded stack on --port (ministack + cdk deploy), with two tenants of its own:
- B (quiet) enqueues `echo` jobs at --rate per second throughout;
- A (noisy) is idle for the first phase, then enqueues `sleep` jobs (--a-job-seconds each, so its
  backlog holds the workers) at 10x B's rate for the second phase, with an enqueue limit of
  --a-limit jobs/s (burst --a-burst): its excess is answered 429.
Reports (definitions: docs/benchmark.md "Noisy neighbour"):
- B's enqueue-to-run p50/p99 (the job's claim minus its enqueue time) with A idle and with A flooding,
  and their ratio (goal: p99 flooding <= 1.5x idle); A's own enqueue-to-run while flooding (its
  backlog's wait: far above B's when the queue is fair);
- A's requests answered 202 and 429 (and anything else), its admitted rate against its limit;
- jobs accepted (202) that have no succeeded record once the queue drained: lost (goal: 0, A and B).
Figures go to stdout and .corral/noisy.json. The worker concurrency is capped (--worker-concurrency):
at 4, A's admitted work (its limit x --a-job-seconds = 2 worker-seconds per second) fills half the
fleet, as a limit sized to the fleet intends; at 2 it fills all of it (the saturated variant).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from bench import measure
from bench.load import EnqueueLoad, Sample
from bench.slo import enqueue_to_run_ms, percentile
from bench.tuning import limit_worker_concurrency, set_limits
from local.deploy import create_api_key
from local.ministack import STATE
from local.platform import Platform, embedded_stack

RESULT = STATE / "noisy.json"
NOISY_FACTOR = 10  # A enqueues at 10x B's rate
P99_RATIO_TARGET = 1.5


@dataclass
class Report:
    b_rate_per_second: float
    a_offered_per_second: float
    a_limit_per_second: float
    a_job_seconds: float
    worker_concurrency: int
    b_idle_p50_ms: float | None
    b_idle_p99_ms: float | None
    b_flood_p50_ms: float | None
    b_flood_p99_ms: float | None
    b_p99_ratio: float | None
    b_p99_ratio_met: bool | None
    a_flood_p50_ms: float | None
    a_flood_p99_ms: float | None
    a_accepted: int
    a_rate_limited: int
    a_other_answers: dict[str, int]
    a_admitted_per_second: float
    b_failed_enqueues: int
    lost_a: int
    lost_b: int
    drained: bool


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def run(platform: Platform, api_url: str, args: argparse.Namespace) -> Report:
    run_id = uuid.uuid4().hex[:6]
    quiet, noisy = f"quiet-{run_id}", f"noisy-{run_id}"
    quiet_key = create_api_key(platform.aws_env, quiet, label="bench")
    noisy_key = create_api_key(platform.aws_env, noisy, label="bench")
    set_limits(platform, noisy, args.a_limit, args.a_burst)
    phase_seconds = 20.0 if args.quick else 60.0
    a_rate = args.rate * NOISY_FACTOR

    def b_rate_at(elapsed: float) -> tuple[str, float] | None:
        if elapsed >= 2 * phase_seconds:
            return None
        return ("idle" if elapsed < phase_seconds else "flood"), args.rate

    def a_rate_at(elapsed: float) -> tuple[str, float] | None:
        return ("flood", a_rate) if elapsed < phase_seconds else None

    quiet_load = EnqueueLoad(api_url, quiet_key, b_rate_at, threads=4)
    noisy_load = EnqueueLoad(
        api_url,
        noisy_key,
        a_rate_at,
        threads=max(8, int(a_rate / 5)),
        payload=lambda n: {"seconds": args.a_job_seconds, "n": n},
        job_type="sleep",
    )
    print(f"B at {args.rate:g}/s for {2 * phase_seconds:g} s; A at {a_rate:g}/s from {phase_seconds:g} s", flush=True)
    quiet_load.start()
    flood = threading.Timer(phase_seconds, noisy_load.start)
    flood.start()
    quiet_load.join()
    flood.join()
    noisy_load.join()
    b_ids = {phase: _accepted(quiet_load.samples, phase) for phase in ("idle", "flood")}
    a_ids = _accepted(noisy_load.samples, "flood")
    rows = measure.wait_until_finished(
        platform.aws("dynamodb"), args.drain_timeout, ids=b_ids["idle"] + b_ids["flood"] + a_ids
    )
    idle = enqueue_to_run_ms(b_ids["idle"], rows)
    flooded = enqueue_to_run_ms(b_ids["flood"], rows)
    a_waits = enqueue_to_run_ms(a_ids, rows)
    idle_p99, flood_p99 = percentile(idle, 99), percentile(flooded, 99)
    ratio = flood_p99 / idle_p99 if idle_p99 and flood_p99 is not None else None
    a_statuses = [sample.status for sample in noisy_load.samples]
    other: dict[str, int] = {}
    for status in a_statuses:
        if status not in (202, 429):
            other[str(status)] = other.get(str(status), 0) + 1
    return Report(
        b_rate_per_second=args.rate,
        a_offered_per_second=a_rate,
        a_limit_per_second=args.a_limit,
        a_job_seconds=args.a_job_seconds,
        worker_concurrency=args.worker_concurrency,
        b_idle_p50_ms=_round(percentile(idle, 50)),
        b_idle_p99_ms=_round(idle_p99),
        b_flood_p50_ms=_round(percentile(flooded, 50)),
        b_flood_p99_ms=_round(flood_p99),
        b_p99_ratio=None if ratio is None else round(ratio, 2),
        b_p99_ratio_met=None if ratio is None else ratio <= P99_RATIO_TARGET,
        a_flood_p50_ms=_round(percentile(a_waits, 50)),
        a_flood_p99_ms=_round(percentile(a_waits, 99)),
        a_accepted=a_statuses.count(202),
        a_rate_limited=a_statuses.count(429),
        a_other_answers=other,
        a_admitted_per_second=round(a_statuses.count(202) / phase_seconds, 1),
        b_failed_enqueues=sum(1 for sample in quiet_load.samples if sample.status != 202),
        lost_a=_lost(a_ids, rows),
        lost_b=_lost(b_ids["idle"] + b_ids["flood"], rows),
        drained=all((row := rows.get(i)) and row.status in ("succeeded", "dead") for i in a_ids + b_ids["flood"]),
    )


def _accepted(samples: list[Sample], phase: str) -> list[str]:
    return [sample.job_id for sample in samples if sample.phase == phase and sample.job_id]


def _lost(ids: list[str], rows: dict[str, measure.JobRow]) -> int:
    """Accepted jobs with no succeeded record after the drain."""
    return sum(1 for job_id in ids if (row := rows.get(job_id)) is None or row.status != "succeeded")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make noisy", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="20 s phases instead of 60 s")
    parser.add_argument("--rate", type=float, default=2.0, help="B's enqueues per second (A: 10x)")
    parser.add_argument("--a-limit", type=float, default=10.0, help="A's enqueue_rate_per_second")
    parser.add_argument("--a-burst", type=int, default=10, help="A's enqueue_burst")
    parser.add_argument("--a-job-seconds", type=float, default=0.2, help="how long each of A's jobs sleeps")
    parser.add_argument(
        "--worker-concurrency",
        type=int,
        default=4,
        help="the worker mapping's MaximumConcurrency (4: A's admitted work fills half of it; 2: all of it)",
    )
    parser.add_argument("--drain-timeout", type=float, default=300.0, help="seconds to wait for the backlog to run")
    parser.add_argument("--port", type=int, default=4580, help="port of the scenario's own emulator")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the emulator
    with embedded_stack(args.port, STATE / "noisy", sidecars=False, announce=True) as stack:
        platform = stack.platform
        limit_worker_concurrency(platform, args.worker_concurrency)
        report = run(platform, stack.endpoint.api_url, args)
    result: dict[str, Any] = asdict(report)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    width = max(len(key) for key in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    print(f"(also in {RESULT})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
