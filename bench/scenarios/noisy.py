"""The noisy neighbour, measured: does a quiet tenant's job still start promptly while another floods?

    make noisy                         # 60 s with tenant A idle, then 60 s with A flooding slow jobs
    make noisy ARGS="--quick"          # 20 s + 20 s: a smoke run
    make noisy ARGS="--a-job tarpit"   # A floods HTTP jobs to a server that never answers

Starts its own embedded stack on --port (ministack + cdk deploy), with two tenants of its own:
- B (quiet) enqueues `echo` jobs at --rate per second throughout;
- A (noisy) is idle for the first phase, then enqueues at 10x B's rate for the second phase, with an
  enqueue limit of --a-limit jobs/s (burst --a-burst): its excess is answered 429. Its jobs are
  `sleep` jobs of --a-job-seconds (`--a-job sleep`), or `http` jobs to a local server that accepts
  and never answers, each timing out after --a-job-seconds, one attempt (`--a-job tarpit`).
- A runs at most --a-max-running jobs at once (its max_running; default half the fleet's job slots).
Reports (definitions: docs/benchmark.md "Noisy neighbour"):
- B's enqueue-to-run p50/p90/p99 (the job's claim minus its enqueue time) with A idle and with A
  flooding; the goal: B's p90 while A floods <= max(3x its idle p90, 1 s);
- A's own enqueue-to-run while flooding, and the most of A's jobs seen running at once (its running
  slots, sampled every 0.2 s) against its cap: the tarpit cannot hold more than its share;
- A's requests answered 202 and 429 (and anything else), its admitted rate against its limit;
- jobs accepted (202) that never ended (B: not succeeded; A: neither succeeded nor dead) once the
  queue drained: lost (goal: 0, A and B).
Figures go to stdout and .corral/noisy.json.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import threading
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from bench.lib import measure, report
from bench.lib.load import EnqueueLoad, Sample
from bench.lib.slo import enqueue_to_run_ms, percentile
from bench.lib.tuning import limit_worker_concurrency, set_limits
from local.deploy import create_api_key
from local.ministack import STATE
from local.platform import Platform, embedded_stack
from shared import settings
from shared.store import keys

RESULT = STATE / "noisy.json"
NOISY_FACTOR = 10  # A enqueues at 10x B's rate
# B's p90 while A floods, at most this many times its idle p90, or this many ms if that is more.
P90_FACTOR_TARGET = 3.0
P90_FLOOR_MS = 1000.0


def p90_target_ms(idle_p90_ms: float) -> float:
    return max(P90_FACTOR_TARGET * idle_p90_ms, P90_FLOOR_MS)


class Tarpit:
    """A server on 127.0.0.1 that accepts connections and never answers: an HTTP job to it hangs until its timeout."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(1024)
        self.port = self._socket.getsockname()[1]
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self._held.append(connection)

    def close(self) -> None:
        self._socket.close()
        for connection in self._held:
            connection.close()


class RunningSampler:
    """The most of a tenant's jobs its running slots held at once, read every `every` seconds."""

    def __init__(self, platform: Platform, tenant: str, every: float = 0.2) -> None:
        self._dynamodb = platform.aws("dynamodb")
        self._key = keys.item_key(keys.running_key(tenant))
        self._every = every
        self._stop = threading.Event()
        self.most = 0
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(self._every):
            try:
                item = self._dynamodb.get_item(TableName=settings.TABLE_NAME, Key=self._key).get("Item") or {}
            except Exception:  # a sample missed under load is not a result
                continue
            self.most = max(self.most, int(item.get("running", {}).get("N", "0")))


@dataclass
class Report:
    b_rate_per_second: float
    a_offered_per_second: float
    a_limit_per_second: float
    a_job: str
    a_job_seconds: float
    a_max_running: int
    worker_concurrency: int
    b_idle_p50_ms: float | None
    b_idle_p90_ms: float | None
    b_idle_p99_ms: float | None
    b_flood_p50_ms: float | None
    b_flood_p90_ms: float | None
    b_flood_p99_ms: float | None
    b_flood_p90_target_ms: float | None
    b_flood_p90_met: bool | None
    a_flood_p50_ms: float | None
    a_flood_p99_ms: float | None
    a_most_running: int
    a_share_held: bool
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
    a_max_running = args.a_max_running or args.worker_concurrency * settings.WORKER_BATCH_SIZE // 2
    set_limits(platform, noisy, args.a_limit, args.a_burst, max_running=a_max_running)
    phase_seconds = 20.0 if args.quick else 60.0
    a_rate = args.rate * NOISY_FACTOR

    def b_rate_at(elapsed: float) -> tuple[str, float] | None:
        if elapsed >= 2 * phase_seconds:
            return None
        return ("idle" if elapsed < phase_seconds else "flood"), args.rate

    def a_rate_at(elapsed: float) -> tuple[str, float] | None:
        return ("flood", a_rate) if elapsed < phase_seconds else None

    tarpit = Tarpit() if args.a_job == "tarpit" else None
    if tarpit is not None:
        a_job: dict[str, Any] = {
            "job_type": "http",
            "payload": lambda n: {"url": f"http://127.0.0.1:{tarpit.port}/hook", "body": {"n": n}},
            "job_fields": {"timeout_seconds": max(1, round(args.a_job_seconds)), "max_attempts": 1},
        }
    else:
        a_job = {"job_type": "sleep", "payload": lambda n: {"seconds": args.a_job_seconds, "n": n}}
    quiet_load = EnqueueLoad(api_url, quiet_key, b_rate_at, threads=4)
    noisy_load = EnqueueLoad(api_url, noisy_key, a_rate_at, threads=max(8, int(a_rate / 5)), **a_job)
    sampler = RunningSampler(platform, noisy)
    print(f"B at {args.rate:g}/s for {2 * phase_seconds:g} s; A at {a_rate:g}/s from {phase_seconds:g} s", flush=True)
    sampler.start()
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
    sampler.stop()
    if tarpit is not None:
        tarpit.close()
    idle = enqueue_to_run_ms(b_ids["idle"], rows)
    flooded = enqueue_to_run_ms(b_ids["flood"], rows)
    a_waits = enqueue_to_run_ms(a_ids, rows)
    idle_p90, flood_p90 = percentile(idle, 90), percentile(flooded, 90)
    target = None if idle_p90 is None else p90_target_ms(idle_p90)
    a_statuses = [sample.status for sample in noisy_load.samples]
    other: dict[str, int] = {}
    for status in a_statuses:
        if status not in (202, 429):
            other[str(status)] = other.get(str(status), 0) + 1
    a_ended = ("succeeded", "dead") if tarpit is not None else ("succeeded",)
    return Report(
        b_rate_per_second=args.rate,
        a_offered_per_second=a_rate,
        a_limit_per_second=args.a_limit,
        a_job=args.a_job,
        a_job_seconds=args.a_job_seconds,
        a_max_running=a_max_running,
        worker_concurrency=args.worker_concurrency,
        b_idle_p50_ms=_round(percentile(idle, 50)),
        b_idle_p90_ms=_round(idle_p90),
        b_idle_p99_ms=_round(percentile(idle, 99)),
        b_flood_p50_ms=_round(percentile(flooded, 50)),
        b_flood_p90_ms=_round(flood_p90),
        b_flood_p99_ms=_round(percentile(flooded, 99)),
        b_flood_p90_target_ms=_round(target),
        b_flood_p90_met=None if target is None or flood_p90 is None else flood_p90 <= target,
        a_flood_p50_ms=_round(percentile(a_waits, 50)),
        a_flood_p99_ms=_round(percentile(a_waits, 99)),
        a_most_running=sampler.most,
        a_share_held=sampler.most <= a_max_running,
        a_accepted=a_statuses.count(202),
        a_rate_limited=a_statuses.count(429),
        a_other_answers=other,
        a_admitted_per_second=round(a_statuses.count(202) / phase_seconds, 1),
        b_failed_enqueues=sum(1 for sample in quiet_load.samples if sample.status != 202),
        lost_a=_lost(a_ids, rows, a_ended),
        lost_b=_lost(b_ids["idle"] + b_ids["flood"], rows, ("succeeded",)),
        drained=all((row := rows.get(i)) and row.status in ("succeeded", "dead") for i in a_ids + b_ids["flood"]),
    )


def _accepted(samples: list[Sample], phase: str) -> list[str]:
    return [sample.job_id for sample in samples if sample.phase == phase and sample.job_id]


def _lost(ids: list[str], rows: dict[str, measure.JobRow], ended: tuple[str, ...]) -> int:
    """Accepted jobs whose record, after the drain, is not in one of the `ended` states."""
    return sum(1 for job_id in ids if (row := rows.get(job_id)) is None or row.status not in ended)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make noisy", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="20 s phases instead of 60 s")
    parser.add_argument("--rate", type=float, default=2.0, help="B's enqueues per second (A: 10x)")
    parser.add_argument("--a-limit", type=float, default=10.0, help="A's enqueue_rate_per_second")
    parser.add_argument("--a-burst", type=int, default=10, help="A's enqueue_burst")
    parser.add_argument("--a-job", choices=("sleep", "tarpit"), default="sleep", help="what A floods with")
    parser.add_argument(
        "--a-job-seconds", type=float, default=0.2, help="how long each of A's jobs sleeps (tarpit: its timeout)"
    )
    parser.add_argument("--a-max-running", type=int, default=0, help="A's max_running (0: half the fleet's job slots)")
    parser.add_argument(
        "--worker-concurrency",
        type=int,
        default=4,
        help="the worker mapping's MaximumConcurrency (batches at once; each runs up to 10 jobs at once)",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=None,
        help="seconds to wait for the backlog to run (300; the tarpit's backlog runs 20 at a time: 900)",
    )
    parser.add_argument("--port", type=int, default=4580, help="port of the scenario's own emulator")
    args = parser.parse_args(argv)
    if args.drain_timeout is None:
        args.drain_timeout = 900.0 if args.a_job == "tarpit" else 300.0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the emulator
    with embedded_stack(args.port, STATE / "noisy", sidecars=False, announce=True) as stack:
        platform = stack.platform
        limit_worker_concurrency(platform, args.worker_concurrency)
        found = run(platform, stack.endpoint.api_url, args)
    result: dict[str, Any] = asdict(found)
    report.keep_and_print(RESULT, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
