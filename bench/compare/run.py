"""`make compare` (`ARGS=--quick`): the benchmark's timeline against corral, a bare SQS→Lambda pipeline
and Celery on SQS, one after another, on one emulator.

    make compare ARGS=--quick          # the quick timeline (15 + 15 + 10 s) for each system
    make compare                       # the full timeline (40 + 30 + 20 s)
    make compare ARGS='--quick --no-search --systems corral bare'

Starts one embedded stack on --port (4597) with its sidecars and corral deployed as `make up` deploys
it, deploys the bare pipeline beside it (bench/compare/bare), and builds the Celery venv
(.corral/celery-venv, bench/compare/requirements-celery.txt) if needed. Then it measures the idle
background (every system's consumers off), and for each system in turn, its consumers on and the
others' off:
1. a warm-up at R and its drain;
2. the search for the highest steady rate at the SLO (bench/scenarios/run.py `find_rate`: 6 s steps, p99
   enqueue-to-run <= 260 ms; max R = a third of the highest step held), unless --no-search;
3. the timeline at the same R for every system (--rate, default bench.scenarios.run.DEFAULT_RATE): steady R,
   herd 3R with crons due at one second, a worker process SIGKILLed and a 5 s store blip, R again,
   its drain; CPU of every process by /proc over it;
4. a drain: a backlog placed while its consumers are paused, then drained (jobs/s, CPU per job).
Writes bench-results/<UTC time>-compare[-quick]/compare.json and compare.png, and prints a table.
Definitions: docs/benchmark.md "corral beside the limit and a peer".
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import sys
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from bench.compare import celery_venv, figures, names
from bench.compare.systems import BareSystem, CelerySystem, System
from bench.lib import faults, measure, report, slo
from bench.lib.timeline import HERD_FACTOR, Scenario, midnight_herd
from bench.lib.tuning import set_limits
from bench.scenarios import run as bench_run
from local.deploy import DEMO_TENANT, api_base_url, deploy_app
from local.ministack import STATE
from local.platform import EmbeddedStack, embedded_stack

ROOT = Path(__file__).resolve().parents[2]
PORT = 4597
IDLE_SECONDS = 5.0
BACKLOG_JOBS = {True: 300, False: 1000}  # the drain's backlog, quick and full
SYSTEMS = ("corral", "bare", "celery")
# `make bench`'s steps, and higher ones: the bare pipeline held its top step (90/s) in the first run.
SEARCH_RATES = (*bench_run.RAMP_RATES, 120, 150, 180)
LOAD_GENERATOR = "load generator"


def _shared_processes(stack: EmbeddedStack) -> dict[str, list[int]]:
    """The processes every system's run uses: the emulator, the sidecars and this process (the load)."""
    assert stack.emulator.process is not None and stack.sidecars is not None
    groups = {"emulator": [stack.emulator.process.pid], LOAD_GENERATOR: [os.getpid()]}
    for process in stack.sidecars.processes:
        groups["status cache" if "local.dax_standin" in process.args else "fault proxy"] = [process.pid]
    return groups


class CpuMeter:
    """CPU seconds by process group between two readings (/proc, as `make drain` reads it), with the
    CPU of load generators that ended in between (they report their own) added to the load's group."""

    def __init__(self, stack: EmbeddedStack, system: System | None) -> None:
        self._stack, self._system = stack, system
        self._before, _ = self._reading()
        self._extra = system.extra_cpu_seconds if system else 0.0
        self.started = time.monotonic()

    def _reading(self) -> tuple[dict[int, float], dict[str, list[int]]]:
        groups = _shared_processes(self._stack) | (self._system.process_groups() if self._system else {})
        return {pid: measure.cpu_seconds(pid) for pids in groups.values() for pid in pids}, groups

    def used(self) -> tuple[dict[str, float], float]:
        """CPU seconds by group since the meter started, and the seconds since."""
        after, groups = self._reading()
        used = measure.group_cpu(self._before, after, groups)
        if self._system:
            used[LOAD_GENERATOR] += self._system.extra_cpu_seconds - self._extra
        return used, time.monotonic() - self.started


def build_systems(stack: EmbeddedStack, rate: float, only: list[str]) -> list[System]:
    platform, chaos = stack.platform, stack.chaos
    assert chaos is not None
    # As `make bench`: the one tenant stands in for all, so its per-tenant limits are lifted.
    set_limits(platform, DEMO_TENANT, rate=1_000_000.0, burst=1_000_000, max_running=0)
    found: list[System] = []
    shared = (platform, chaos, rate)
    if "corral" in only:
        found.append(System(*shared, name="corral", note="as `make up` deploys it"))
    if "bare" in only:
        key = secrets.token_urlsafe(16)
        print("deploying the bare pipeline (bench/compare/bare) ...", flush=True)
        outputs = deploy_app(
            f"{sys.executable} -m bench.compare.bare.app",
            names.BARE_STACK,
            stack.aws_env,
            {
                # Its DynamoDB calls through the fault proxy, as corral's: the blip reaches them.
                "bare:function_env": json.dumps({"AWS_ENDPOINT_URL_DYNAMODB": chaos.proxy_url}),
                "bare:api_key": key,
            },
            STATE / "compare",
        )
        api_id = outputs["ApiUrl"].split("//", 1)[1].split(".", 1)[0]
        bare = BareSystem(*shared, name="bare", queue_name=names.BARE_NAME, table=names.BARE_NAME)
        bare.note = "one SendMessage per enqueue, one unconditional PutItem per job"
        bare.bare_api_url, bare.bare_api_key = api_base_url(stack.emulator.endpoint, api_id), key
        found.append(bare)
    if "celery" in only:
        celery = CelerySystem(*shared, name="celery", queue_name=names.CELERY_QUEUE, table=names.CELERY_RESULTS_TABLE)
        celery.note = "no API Gateway in front: apply_async from the load generator; workers are local processes"
        celery.state_dir = STATE / "compare"
        found.append(celery)
    return found


def _store_requests(stack: EmbeddedStack) -> Counter[str]:
    """The DynamoDB requests that reached the store so far (both fault injectors), by operation."""
    assert stack.chaos is not None
    stats = stack.chaos.stats()["proxy"]
    return Counter({name: count for name, count in stats.items() if not name.endswith(".injected")})


def drain_round(stack: EmbeddedStack, system: System, jobs: int) -> dict[str, Any]:
    """A backlog of `jobs` placed while the system's consumers are paused, then drained."""
    system.pause()
    ids = system.place_backlog(jobs)
    url = system.queue_url()
    meter = CpuMeter(stack, system)
    requests_before = _store_requests(stack)
    system.resume()
    bench_run._drain(system, url, 120, "backlog drain")
    time.sleep(1)  # the last outcome writes
    used, _ = meter.used()
    store_requests = _store_requests(stack) - requests_before
    drain = figures.drain_figures(system.job_rows(), ids, sum(used.values()), store_requests)
    by_group = {name: round(value * 1000 / max(1, drain["jobs"]), 2) for name, value in used.items()}
    return {**drain, "cpu_ms_per_job_by_group": by_group}


def run_system(
    stack: EmbeddedStack, system: System, args: argparse.Namespace, idle: dict[str, float]
) -> tuple[dict[str, Any], report.Panel, Scenario]:
    """One system's warm-up, search, timeline and drain; its figures and its plot panel."""
    print(f"\n=== {system.name}: {system.note}", flush=True)
    if isinstance(system, CelerySystem):
        system.start()
    else:
        system.resume()
    try:
        bench_run._steady(system, args.rate, bench_run.WARM_UP_SECONDS, "warmup")
        queue_url = system.queue_url()
        bench_run._drain(system, queue_url, 60, "warm-up drain")
        max_rate, ramp = None, []
        if not args.no_search:
            max_rate, ramp = bench_run.find_rate(system, queue_url, SEARCH_RATES)
            bench_run._drain(system, queue_url, 180, "post-search drain")
            print(f"{system.name}: max R at the SLO = {max_rate:g}/s; steps {ramp}", flush=True)
        system.base_rate = args.rate
        scenario = midnight_herd(
            quick=args.quick, herd=faults.herd_crons, kill=faults.kill_worker, blip=faults.store_blip
        )
        bench_run._crons_ahead(system, scenario)
        meter = CpuMeter(stack, system)
        run = bench_run.run_scenario(system, scenario, queue_url, drain_timeout=60 if args.quick else 120)
        gross, seconds = meter.used()
        rows = system.job_rows()
        cron = system.cron_herd or {}
        cron_ids = [row.id for row in rows.values() if (row.schedule or "").startswith(cron.get("prefix", "-"))]
        if cron.get("due_epoch"):  # a cron waits from its due second (bench/scenarios/run.py)
            rows = slo.waiting_from_due(rows, cron_ids, cron["due_epoch"])
        timeline = figures.Timeline(
            samples=run["samples"],
            rows=rows,
            cron_ids=cron_ids,
            crons_expected=int(cron.get("expected", 0)),
            runs=system.runs(rows, run["started_epoch"] - 5),
            outcome_writes=system.outcome_writes(),
        )
        drain = drain_round(stack, system, BACKLOG_JOBS[args.quick])
    finally:
        system.stop()
    result = figures.system_figures(timeline, figures.net_cpu(gross, idle, seconds), drain, max_rate)
    timeline_ids = {sample.job_id for sample in timeline.samples if sample.job_id} | set(cron_ids)
    result["details"] = {
        "note": system.note,
        "cpu_seconds_gross": {k: round(v, 3) for k, v in gross.items()},
        "timeline_seconds": round(seconds, 1),
        "ramp": ramp,
        # Every step held: the max rate is at least this (the search's top step, not the system's limit).
        "max_rate_is_a_lower_bound": bool(ramp) and all(step["held"] for step in ramp),
        "events": [asdict(m) for m in run["markers"]],
        "environments_after_run": run["environments"],
        "enqueue_slots_skipped_clients_busy": run["skipped"],
        "cron_herd": {k: v for k, v in cron.items() if k != "prefix"},
        # Which jobs, to look them up (the record, the worker's log): a few at most.
        "ran_twice_ids": sorted(i for i in timeline_ids if timeline.runs.get(i, 0) > 1)[:20],
        "recorded_twice_ids": sorted(i for i in timeline_ids if timeline.outcome_writes.get(i, 0) > 1)[:20],
    }
    windows = bench_run._windows(system, scenario, run)
    accepted = [sample.job_id for sample in timeline.samples if sample.job_id]
    causes = bench_run._causes([*accepted, *cron_ids], rows, run["started_epoch"], windows)
    start = run["started_epoch"]
    points = [
        report.Point(rows[i].enqueued_at - start, (rows[i].started_at - rows[i].enqueued_at) * 1000, cause)
        for i, cause in causes.items()
    ]
    result["details"]["slow_jobs_by_cause"] = {c: list(causes.values()).count(c) for c in sorted(set(causes.values()))}
    return result, report.Panel(system.name, points, run["markers"], windows), scenario


def idle_background(stack: EmbeddedStack) -> dict[str, float]:
    """CPU seconds per second of the shared processes with every system's consumers off."""
    meter = CpuMeter(stack, None)
    time.sleep(IDLE_SECONDS)
    used, seconds = meter.used()
    return {name: value / seconds for name, value in used.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make compare", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="the quick timeline (15 + 15 + 10 s)")
    parser.add_argument("--rate", type=float, default=bench_run.DEFAULT_RATE, help="R for every system's timeline")
    parser.add_argument("--no-search", action="store_true", help="skip the search for the max rate at the SLO")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--out", type=Path, help="results folder (default bench-results/<UTC time>-compare)")
    args = parser.parse_args(argv)
    given = " ".join(sys.argv[1:] if argv is None else argv)
    command = f"make compare ARGS='{given}'" if given else "make compare"
    name = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-compare" + ("-quick" if args.quick else "")
    out = args.out or ROOT / "bench-results" / name
    out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops what it started
    if "celery" in args.systems:
        celery_venv.ensure_installed()
    wall = time.monotonic()
    results: dict[str, Any] = {}
    panels: list[report.Panel] = []
    scenario = None
    with embedded_stack(args.port, STATE / "compare", sqs_through_proxy=False, announce=True) as stack:
        found = build_systems(stack, args.rate, args.systems)
        for system in found:
            system.pause()
        idle = idle_background(stack)
        for system in tqdm(found, desc="systems", unit="system"):
            results[system.name], panel, scenario = run_system(stack, system, args, idle)
            panels.append(panel)
    found_ratios = figures.ratios(results)
    document = {
        "systems": results,
        "ratios": found_ratios,
        "targets": figures.targets(found_ratios, results),
        "run": {
            "command": command,
            "rate": args.rate,
            "herd_rate": args.rate * HERD_FACTOR,
            "idle_cpu_ms_per_second": {k: round(v * 1000, 1) for k, v in idle.items()},
            "machine": f"{os.cpu_count()} cores, shared with the embedded AWS running every Lambda",
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - (time.monotonic() - wall))),
            "wall_seconds": round(time.monotonic() - wall, 1),
        },
    }
    report.write_json(out / "compare.json", document)
    if scenario is not None:
        phases = [(p.name, *scenario.window(p.name)) for p in scenario.phases]
        title = f"enqueue-to-run, R = {args.rate:g}/s, herd x{HERD_FACTOR:g}; {command}"
        report.plot_systems(out / "compare.png", panels, phases, title)
    print()
    print(figures.table(results, found_ratios))
    for name, system in results.items():
        print(f"{name}: {system['jobs']}; slow jobs by cause {system['details']['slow_jobs_by_cause']}")
    print(f"\nwritten: {out / 'compare.json'}, {out / 'compare.png'} (wall {document['run']['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
