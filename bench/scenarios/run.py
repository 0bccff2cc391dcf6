"""`make bench` (`make bench ARGS=--quick`): the SLO benchmark on its own embedded stack.

Starts ministack on 127.0.0.1:4616 (CORRAL_BENCH_PORT), deploys the stack, then: finds the base
rate R (full run; --rate fixes it), runs the midnight-herd timeline (steady at R, herd at 3R with
a worker killed and a store blip, R again), drains, measures bulk enqueue and the cost of our
own code, and writes bench-results/<run>/slo.json + slo.png and prints a table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from bench.lib import faults, measure, report, slo
from bench.lib.bulk import BulkResult, bulk_rate, queue_ceiling
from bench.lib.crons import create_herd, herd_records
from bench.lib.load import EnqueueLoad, Phases, Sample, rate_of_phases
from bench.lib.timeline import HERD_FACTOR, Event, Scenario, midnight_herd
from bench.lib.tuning import set_limits
from bench.scenarios import cost
from infra import footprint as infra_footprint
from local.chaos import Chaos
from local.deploy import DEMO_TENANT
from local.ministack import CREDENTIALS, STATE, worker_pids
from local.platform import Platform, embedded_stack
from local.prewarm import jobs_queue_mapping
from shared import settings
from shared.environment import FunctionEnv

ROOT = Path(__file__).resolve().parents[2]  # the repository
BENCH_PORT = int(os.environ.get("CORRAL_BENCH_PORT", "4616"))
# The base rate when --rate is not given and the run does not search for one (--quick): on the
# 2-core development machine the embedded API saturates near 35-45 enqueues/s (docs/benchmark.md),
# so the herd's 3R must stay below that.
DEFAULT_RATE = 8.0
RAMP_RATES = (9, 15, 21, 27, 33, 39, 45, 60, 90)  # requests/s tried by the search, each for RAMP_STEP_SECONDS
RAMP_STEP_SECONDS = 6
WARM_UP_SECONDS = 10
CRON_CREATION_ALLOWANCE_SECONDS = 10  # creating the herd's crons before the load (80 at ~30-200/s here)


class Load(Protocol):
    """An open-loop enqueue load as the timeline drives it (bench/lib/load.py's EnqueueLoad is one)."""

    samples: list[Sample]
    skipped: dict[str, int]
    started: float  # time.monotonic() of the schedule's time 0

    def start(self) -> None: ...

    def join(self) -> None: ...


@dataclass
class RunContext:
    """What event actions get: the platform, its faults, and what the cron herd created.

    The methods below are corral's; `make compare` (bench/compare/) runs the same timeline against
    other systems by overriding them: how jobs are enqueued, read back, and what a kill or a cron is.
    """

    platform: Platform
    chaos: Chaos
    base_rate: float
    cron_herd: dict[str, Any] | None = None

    @property
    def api_url(self) -> str:
        return self.platform.api_url

    @property
    def api_key(self) -> str:
        return self.platform.api_key

    def aws(self, service: str) -> Any:
        return self.platform.aws(service)

    def new_load(self, phases: Phases, threads: int) -> Load:
        return EnqueueLoad(self.api_url, self.api_key, rate_of_phases(phases), threads)

    def job_rows(self) -> dict[str, measure.JobRow]:
        return measure.job_rows(self.aws("dynamodb"))

    def worker_pids(self) -> list[int]:
        """The processes running jobs: one is what the `kill` event ends."""
        return worker_pids(self.chaos.emulator, settings.WORKER_FUNCTION)

    def create_crons(self, prefix: str, count: int, due: datetime) -> float | None:
        """`count` crons named `prefix`-..., all due at `due`; returns how many were created per second."""
        return create_herd(self.platform, prefix, count, due, 8)

    def environments(self) -> dict[str, int]:
        """Execution environments alive: more API ones than the pre-warm started are cold starts the
        herd caused in its requests' path."""
        return {
            function: len(worker_pids(self.chaos.emulator, function))
            for function in (settings.API_FUNCTION, settings.WORKER_FUNCTION)
        }


def _client_threads(rate: float) -> int:
    # Enough clients that ~100 ms answers still keep up with the herd's rate.
    return max(8, min(64, math.ceil(rate * HERD_FACTOR / 10)))


def _drain(context: RunContext, queue_url: str, timeout: float, label: str) -> float:
    """Wait (bounded) until the queue holds nothing, visible or in flight; returns the seconds waited."""
    sqs = context.aws("sqs")
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    started = time.monotonic()
    empty_in_a_row = 0
    with tqdm(desc=label, unit="msg", leave=False) as bar:
        while time.monotonic() - started < timeout:
            got = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
            depth = sum(int(got[name]) for name in names)
            bar.set_postfix(depth=depth)
            bar.refresh()
            empty_in_a_row = empty_in_a_row + 1 if depth == 0 else 0
            if empty_in_a_row >= 3:
                break
            time.sleep(0.5)
    return time.monotonic() - started


def _steady(context: RunContext, rate: float, seconds: float, phase: str) -> list[Sample]:
    load = context.new_load([(phase, seconds, rate)], _client_threads(rate))
    load.start()
    load.join()
    return load.samples


def find_rate(
    context: RunContext, queue_url: str, rates: tuple[int, ...] = RAMP_RATES
) -> tuple[float, list[dict[str, Any]]]:
    """The highest rate that holds (accepted >= 95 % of target, no errors, enqueue-to-run p99 <= 260 ms);
    the base rate R is a third of it, so the herd's 3R still holds. `rates`: the steps, lowest first."""
    steps: list[dict[str, Any]] = []
    best = 0.0
    for rate in tqdm(rates, desc="finding R", unit="step"):
        samples = _steady(context, rate, RAMP_STEP_SECONDS, f"ramp-{rate}")
        _drain(context, queue_url, 20, "ramp drain")
        ids = [s.job_id for s in samples if s.job_id]
        rows = context.job_rows()
        e2r_p99 = slo.percentile(slo.enqueue_to_run_ms(ids, rows), 99)
        achieved = len(ids) / RAMP_STEP_SECONDS
        held = achieved >= 0.95 * rate and len(ids) == len(samples) and e2r_p99 is not None and e2r_p99 <= 260
        steps.append({"rate": rate, "achieved_rps": round(achieved, 1), "enqueue_to_run_p99_ms": e2r_p99, "held": held})
        if not held:
            break
        best = rate
    return best / HERD_FACTOR, steps


def run_scenario(context: RunContext, scenario: Scenario, queue_url: str, drain_timeout: float) -> dict[str, Any]:
    phases = [(phase.name, phase.seconds, context.base_rate * phase.rate_factor) for phase in scenario.phases]
    load = context.new_load(phases, _client_threads(context.base_rate))
    load.start()
    # The wall time of the load's time 0, which a load started in another process sets ahead of now.
    started_epoch = time.time() + (load.started - time.monotonic())
    depth = measure.QueueDepth(context.aws("sqs"), queue_url, load.started)
    depth.start()
    markers: list[report.Marker] = []
    events = threading.Thread(target=_fire_events, args=(context, scenario.events, load.started, markers), daemon=True)
    events.start()
    with tqdm(total=round(scenario.load_seconds), unit="s", desc="herd timeline") as bar:
        while (elapsed := time.monotonic() - load.started) < scenario.load_seconds:
            phase = scenario.phase_at(elapsed)
            latest = depth.latest()
            bar.n = min(round(elapsed), bar.total)
            bar.set_postfix(phase=phase.name if phase else "-", sent=len(load.samples), depth=latest and latest.visible)
            time.sleep(0.5)
        bar.n = bar.total
        bar.refresh()
    load.join()
    events.join()
    drained = _drain(context, queue_url, drain_timeout, "drain")
    depth.stop()
    return {
        "environments": context.environments(),
        "samples": load.samples,
        "skipped": load.skipped,
        "depth": depth.samples,
        "markers": markers,
        "started_epoch": started_epoch,
        "drain_seconds": drained,
    }


def _fire_events(context: RunContext, events: list[Event], started: float, markers: list[report.Marker]) -> None:
    for event in sorted(events, key=lambda e: e.at):
        delay = started + event.at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        try:
            note, wired = event.action(context), True
        except NotImplementedError as missing:
            note, wired = str(missing), False
        except Exception as error:  # a fault that fails to fire is reported, and the run goes on
            note, wired = f"failed: {type(error).__name__}: {error}", False
        markers.append(report.Marker(time.monotonic() - started, event.name, note, wired))


def _crons_ahead(context: RunContext, scenario: Scenario) -> None:
    """Create the herd's crons before the load (CRON_LEAD_SECONDS after the herd starts, as before),
    then start the load so that its herd phase begins CRON_LEAD_SECONDS before they are due."""
    lead = scenario.start_of("herd") + faults.CRON_LEAD_SECONDS
    due = datetime.fromtimestamp(math.ceil(time.time() + CRON_CREATION_ALLOWANCE_SECONDS + lead), UTC)
    faults.create_crons_ahead(context, due)
    wait = due.timestamp() - lead - time.time()
    if wait < 0:  # the herd phase then starts less than CRON_LEAD_SECONDS before they are due
        print(f"creating the herd's crons took {CRON_CREATION_ALLOWANCE_SECONDS - wait:.0f} s", flush=True)
    time.sleep(max(0.0, wait))


def _worker_mapping(context: RunContext) -> dict[str, Any]:
    return jobs_queue_mapping(context.aws("lambda"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a run under 3 minutes: short phases, no search for R")
    parser.add_argument("--rate", type=float, help="base rate R (API enqueues/s); default: search (quick: %s)")
    parser.add_argument(
        "--worker-concurrency",
        type=int,
        help="set the worker mapping's MaximumConcurrency after deploy (to compare local settings)",
    )
    parser.add_argument(
        "--running",
        action="store_true",
        help="use the stack `make up` is serving (.corral/endpoint.json) instead of starting one",
    )
    parser.add_argument(
        "--without",
        action="append",
        choices=["kill", "blip"],
        default=[],
        help="leave a fault out of the timeline (repeatable): what the other load costs on its own",
    )
    parser.add_argument("--port", type=int, default=BENCH_PORT)
    parser.add_argument("--out", type=Path, help="results folder (default bench-results/<UTC time>)")
    args = parser.parse_args(argv)
    given = " ".join(sys.argv[1:] if argv is None else argv)
    args.command = f"make bench ARGS='{given}'" if given else "make bench"
    run_name = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + ("-quick" if args.quick else "")
    out = args.out or ROOT / "bench-results" / run_name
    out.mkdir(parents=True, exist_ok=True)
    wall = time.monotonic()
    if args.running:
        results = _measure(_running_context(), args, out)
    else:
        # The enqueue path stays off the fault proxy: the benchmark measures the platform, not the extra hop.
        with embedded_stack(args.port, STATE / "bench", sqs_through_proxy=False, announce=True) as stack:
            assert stack.chaos is not None  # its sidecars are started
            results = _measure(RunContext(stack.platform, stack.chaos, DEFAULT_RATE), args, out)
    results["run"]["wall_seconds"] = round(time.monotonic() - wall, 1)
    report.write_json(out / "slo.json", results)
    print(f"\nwritten: {out / 'slo.json'}, {out / 'slo.png'} (wall {results['run']['wall_seconds']:.0f} s)")
    return 0


def _running_context() -> RunContext:
    endpoint = json.loads((STATE / "endpoint.json").read_text())
    aws_env = {**CREDENTIALS, "AWS_ENDPOINT_URL": endpoint["aws_endpoint"]}
    running = Platform(endpoint["api_url"], endpoint["api_key"], aws_env, emulated=True)
    return RunContext(running, Chaos.of(STATE), DEFAULT_RATE)


def _measure(context: RunContext, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    queue_url = context.aws("sqs").get_queue_url(QueueName=settings.QUEUE_NAME)["QueueUrl"]
    # One tenant stands in for all of them here, and the SLO's rates (bulk 6,000 jobs/s) are the
    # platform's, not one tenant's: its per-tenant enqueue limit and running cap are lifted, as an operator would.
    set_limits(context.platform, DEMO_TENANT, rate=1_000_000.0, burst=1_000_000, max_running=0)
    if args.worker_concurrency:
        context.aws("lambda").update_event_source_mapping(
            UUID=_worker_mapping(context)["UUID"], ScalingConfig={"MaximumConcurrency": args.worker_concurrency}
        )
    # Start as many API and worker environments as the load will use (cold starts are not the
    # steady state being measured), then let the queue empty.
    _steady(context, args.rate or DEFAULT_RATE, WARM_UP_SECONDS, "warmup")
    _drain(context, queue_url, 60, "warm-up drain")
    ramp: list[dict[str, Any]] = []
    if args.rate:
        context.base_rate = args.rate
    elif not args.quick:
        context.base_rate, ramp = find_rate(context, queue_url)
        if context.base_rate <= 0:
            raise SystemExit(f"no rate held the targets: {ramp}")
        _drain(context, queue_url, 180, "post-search drain")  # the failed step's backlog is not the timeline's
    print(f"base rate R = {context.base_rate:g} enqueues/s (herd: {context.base_rate * HERD_FACTOR:g}/s)", flush=True)
    scenario = midnight_herd(
        quick=args.quick,
        herd=faults.herd_crons,
        kill=faults.left_out("kill") if "kill" in args.without else faults.kill_worker,
        blip=faults.left_out("blip") if "blip" in args.without else faults.store_blip,
    )
    _crons_ahead(context, scenario)
    run = run_scenario(context, scenario, queue_url, drain_timeout=60 if args.quick else 120)
    rows = measure.job_rows(context.aws("dynamodb"))
    worker = context.aws("lambda").get_function_configuration(FunctionName=settings.WORKER_FUNCTION)
    log_group = worker.get("LoggingConfig", {}).get("LogGroup") or f"/aws/lambda/{settings.WORKER_FUNCTION}"
    batches = measure.worker_batches(context.aws("logs"), log_group, run["started_epoch"])
    run["hand_backs"] = measure.hand_backs(context.aws("logs"), log_group, run["started_epoch"])
    report.write_batches_csv(out / "batches.csv", batches, run["started_epoch"])
    report.write_requests_csv(out / "requests.csv", run["samples"])
    mapping = _worker_mapping(context)

    # Bulk and cost measurements with the workers paused, so they measure enqueue alone.
    lambda_ = context.aws("lambda")
    lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    try:
        bulk_seconds = 5 if args.quick else 10
        bulk = bulk_rate(context.api_url, context.api_key, seconds=bulk_seconds, clients=4)
        ceiling = _queue_ceiling(context, seconds=bulk_seconds, clients=4)
        function_env = FunctionEnv(queue_url=queue_url, table=settings.TABLE_NAME).as_environment()
        enqueue_cost = cost.enqueue_cost(
            context.platform.aws_env, function_env, context.api_key, 200 if args.quick else 600
        )
        cold = cost.cold_start()
    finally:
        context.aws("sqs").purge_queue(QueueUrl=queue_url)
        lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=True)
    return _results(
        context, args, scenario, run, rows, batches, mapping, ramp, (bulk, ceiling), enqueue_cost, cold, out
    )


def _queue_ceiling(context: RunContext, *, seconds: float, clients: int) -> BulkResult:
    """The emulator's own SendMessageBatch rate, on a queue of its own made for the purpose (empty, as the jobs
    queue was when bulk began) and deleted after: what bulk enqueue's figure is a share of on this machine."""
    sqs = context.aws("sqs")
    url = sqs.create_queue(QueueName=f"{settings.QUEUE_NAME}-bench-ceiling")["QueueUrl"]
    try:
        return queue_ceiling(sqs, url, seconds=seconds, clients=clients)
    finally:
        sqs.delete_queue(QueueUrl=url)


def _results(
    context: RunContext,
    args: argparse.Namespace,
    scenario: Scenario,
    run: dict[str, Any],
    rows: dict[str, measure.JobRow],
    batches: list[measure.Batch],
    mapping: dict[str, Any],
    ramp: list[dict[str, Any]],
    bulk_and_ceiling: tuple[BulkResult, BulkResult],
    enqueue_cost: dict[str, float],
    cold: dict[str, float],
    out: Path,
) -> dict[str, Any]:
    bulk, ceiling = bulk_and_ceiling
    samples: list[Sample] = run["samples"]
    accepted = [s.job_id for s in samples if s.job_id]
    cron = _cron_herd(context)
    if cron["ids"] and "due_epoch" in cron:
        lateness = slo.firing_lateness_ms(rows, cron["ids"], cron["due_epoch"])
        cron["fired_after_due_ms"] = {p: _round(slo.percentile(lateness, p)) for p in (50, 99, 100)}
        rows = slo.waiting_from_due(rows, cron["ids"], cron["due_epoch"])  # a cron waits from its due second
    done = slo.executed(accepted + cron["ids"], rows)
    e2r = slo.enqueue_to_run_ms(accepted + cron["ids"], rows)
    # Over every job the clients tried to create: an enqueue that timed out or got no 202 is a job
    # not executed, and so is a cron that never fired (it has no id to look up).
    attempted = len(samples) + cron["expected"]
    failed_enqueues = [s for s in samples if s.status != 202]
    executed_pct = 100 * done.succeeded / max(1, attempted)
    windows = _windows(context, scenario, run)
    causes = _causes(accepted + cron["ids"], rows, run["started_epoch"], windows)
    before = slo.phase_latencies(samples, "steady")
    during = slo.phase_latencies(samples, "herd")
    p99_before, p99_during = slo.percentile(before, 99), slo.percentile(during, 99)
    herd_start, herd_end = scenario.window("herd")
    finished = [rows[i].finished_at for i in accepted if i in rows and rows[i].finished_at]
    start_epoch = run["started_epoch"]
    window = (start_epoch, max(finished, default=start_epoch + scenario.load_seconds))
    capacity = int((mapping.get("ScalingConfig") or {}).get("MaximumConcurrency") or settings.WORKER_MAX_CONCURRENCY)
    use = slo.utilisation(batches, capacity, window)
    herd_use = slo.utilisation(batches, capacity, (start_epoch + herd_start, start_epoch + herd_end))
    footprint = _footprint()
    results: dict[str, Any] = {
        "executed_pct": round(executed_pct, 3),
        "failed_enqueues": len(failed_enqueues),
        "enqueue_to_run_p99_ms": _round(slo.percentile(e2r, 99)),
        "enqueue_p99_ms_before": _round(p99_before),
        "enqueue_p99_ms_during": _round(p99_during),
        "sustained_enqueue_rps": round(slo.accepted_rate(samples, "herd", herd_end - herd_start), 1),
        "bulk_enqueue_rps": round(bulk.jobs_per_second, 1),
        "worker_utilisation_pct": round(use.overall_pct, 2),
        "footprint": footprint["components"],
        "details": {
            "base_rate_rps": context.base_rate,
            "herd_rate_rps": context.base_rate * HERD_FACTOR,
            "accepted_rps_by_phase": {
                p.name: round(slo.accepted_rate(samples, p.name, p.seconds), 1) for p in scenario.phases
            },
            "jobs": {"attempted": attempted, **asdict(done)},
            "cron_herd": {k: v for k, v in cron.items() if k != "ids"},
            "failed_enqueues_by_status": _by_status(failed_enqueues),
            "slow_jobs_by_cause": {
                cause: sum(1 for c in causes.values() if c == cause) for cause in sorted(set(causes.values()))
            },
            "fault_windows": [asdict(w) for w in windows],
            "enqueue_slots_skipped_clients_busy": run["skipped"],
            "enqueue_to_run_ms": {p: _round(slo.percentile(e2r, p)) for p in (50, 90, 99, 100)},
            "enqueue_ms": {
                "before": {p: _round(slo.percentile(before, p)) for p in (50, 99)},
                "during": {p: _round(slo.percentile(during, p)) for p in (50, 99)},
            },
            "enqueue_p99_during_over_before": _round(p99_during / p99_before if p99_before and p99_during else None),
            "worker_utilisation": {
                "overall_pct": round(use.overall_pct, 2),
                "herd_pct": round(herd_use.overall_pct, 2),
                "peak_second_pct": round(use.peak_second_pct, 1),
                "capacity_concurrent_batches": capacity,
                "window_seconds": round(use.window_seconds, 1),
                "batches": len(batches),
                "per_worker_pct": use.per_worker_pct,
            },
            "bulk": asdict(bulk),
            "bulk_queue_ceiling": asdict(ceiling),
            "bulk_over_queue_ceiling": _round(bulk.jobs_per_second / ceiling.jobs_per_second)
            if ceiling.jobs_per_second
            else None,
            "enqueue_cost": {k: round(v, 3) for k, v in enqueue_cost.items()},
            "cold_start": {k: round(v, 3) for k, v in cold.items()},
            "footprint": footprint,
            "events": [asdict(m) for m in run["markers"]],
            "drain_seconds": round(run["drain_seconds"], 1),
            "worker_hand_backs_by_reason": run["hand_backs"],
            "environments_after_run": run["environments"],
            "ramp": ramp,
        },
        "run": {
            "command": args.command,
            "machine": f"{os.cpu_count()} cores, shared with the embedded AWS running every Lambda",
            "phases": [asdict(p) for p in scenario.phases],
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start_epoch)),
        },
    }
    _print_and_plot(results, run, rows, causes, windows, scenario, out)
    return results


def _windows(context: RunContext, scenario: Scenario, run: dict[str, Any]) -> list[slo.Window]:
    """Where each fault and the herd acted (seconds since the load started), in the order a slow job is
    blamed: the blip, the cron second, the kill, the herd. The cron second before the kill: its burst
    alone makes the same slow jobs (`make bench ARGS='--rate 20 --without kill'`, docs/benchmark.md),
    and the kill's own batch is told apart by its attempts (`slo.cause_of_wait`)."""
    spans = {"blip": faults.BLIP_SECONDS, "kill": faults.KILL_RECOVERY_SECONDS}
    windows = [slo.Window(m.name, m.at, m.at + spans[m.name]) for m in run["markers"] if m.wired and m.name in spans]
    # The blip's failed claims are handed back and come back later: its window lasts until the
    # queue is back to its depth before the blip.
    windows = [
        slo.Window(w.cause, w.start, slo.backlog_end(run.get("depth", []), w.start, w.end)) if w.cause == "blip" else w
        for w in windows
    ]
    if context.cron_herd and "due_epoch" in context.cron_herd:
        due = context.cron_herd["due_epoch"] - run["started_epoch"]
        windows.append(slo.Window("crons", due, due + faults.SCHEDULER_LATENESS_SECONDS))
    order = ["blip", "crons", "kill"]
    return [*sorted(windows, key=lambda w: order.index(w.cause)), slo.Window("herd", *scenario.window("herd"))]


def _causes(
    ids: list[str], rows: dict[str, measure.JobRow], start_epoch: float, windows: list[slo.Window]
) -> dict[str, str]:
    """Each job that ran: on time, or the fault or herd window its wait overlapped."""
    causes = {}
    for job_id in ids:
        row = rows.get(job_id)
        if row and row.started_at and row.enqueued_at:
            wait_ms = (row.started_at - row.enqueued_at) * 1000
            causes[job_id] = slo.cause_of_wait(
                row.enqueued_at - start_epoch, row.started_at - start_epoch, wait_ms, windows, row.attempts
            )
    return causes


def _by_status(failed: list[Sample]) -> dict[str, int]:
    """Failed enqueues by what the client saw: no answer in 10 s (or no connection), 5xx, 4xx."""
    kinds = ["no answer" if s.status == 0 else f"{s.status // 100}xx" for s in failed]
    return {kind: kinds.count(kind) for kind in sorted(set(kinds))}


def _footprint() -> dict[str, Any]:
    """The deployed stack's component kinds (infra/footprint.py), from the template its deploy synthesized."""
    template = ROOT / "cdk.out" / f"{settings.STACK_NAME}.template.json"
    if not template.exists():
        return {"components": None, "kinds": {}, "source": f"{template} not found (run `make synth`)"}
    found = infra_footprint.report("local", json.loads(template.read_text()))
    return {**found, "source": str(template.relative_to(ROOT))}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _print_and_plot(
    results: dict[str, Any],
    run: dict[str, Any],
    rows: dict[str, measure.JobRow],
    causes: dict[str, str],
    windows: list[slo.Window],
    scenario: Scenario,
    out: Path,
) -> None:
    details = results["details"]
    start_epoch = run["started_epoch"]
    e2r_points = [
        report.Point(rows[i].enqueued_at - start_epoch, (rows[i].started_at - rows[i].enqueued_at) * 1000, cause)
        for i, cause in causes.items()
    ]
    phases = [(p.name, *scenario.window(p.name)) for p in scenario.phases]
    title = (
        f"corral SLO benchmark: R = {details['base_rate_rps']:g}/s, herd x{HERD_FACTOR:g}; {results['run']['command']}"
    )
    report.plot(out / "slo.png", run["samples"], e2r_points, run["depth"], run["markers"], windows, phases, title)
    report.write_jobs_csv(out / "jobs.csv", rows, causes, start_epoch)
    print()
    print(
        report.table(
            [
                ("jobs executed, of attempted (%)", results["executed_pct"], "executed_pct"),
                ("enqueues failed (no 202)", results["failed_enqueues"], "failed_enqueues"),
                ("enqueue-to-run p99 (ms)", results["enqueue_to_run_p99_ms"], "enqueue_to_run_p99_ms"),
                ("enqueue p99 before herd (ms)", results["enqueue_p99_ms_before"], "report"),
                ("enqueue p99 during herd (ms)", results["enqueue_p99_ms_during"], "report"),
                ("  during / before", details["enqueue_p99_during_over_before"], "enqueue_p99_during_over_before"),
                # The herd's offered load (3R), not a capacity: bulk and the search for R measure that.
                ("enqueues/s accepted, single (herd)", results["sustained_enqueue_rps"], "report"),
                ("enqueues/s accepted, bulk", results["bulk_enqueue_rps"], "bulk_enqueue_rps"),
                ("  the queue's own ceiling (jobs/s)", details["bulk_queue_ceiling"]["jobs_per_second"], "report"),
                ("  bulk / the queue's ceiling", details["bulk_over_queue_ceiling"], "report"),
                ("worker utilisation (%)", results["worker_utilisation_pct"], "worker_utilisation_pct"),
                ("  during the herd (%)", details["worker_utilisation"]["herd_pct"], "report"),
                ("footprint (component kinds)", results["footprint"], "footprint"),
                ("handler / send_message", details["enqueue_cost"]["ratio"], "handler_over_send_message"),
                ("  its own code / send_message", details["enqueue_cost"].get("own_code_over_send"), "report"),
                ("import handler / boto3", details["cold_start"]["ratio"], "import_over_boto3"),
            ]
        )
    )
    jobs = details["jobs"]
    print(
        f"\nR = {details['base_rate_rps']:g}/s; jobs attempted {jobs['attempted']}, accepted {jobs['accepted']}, "
        f"succeeded {jobs['succeeded']} ({jobs['retried']} after a retry), unfinished {jobs['unfinished']}, "
        f"dead {jobs['dead']}; failed enqueues {details['failed_enqueues_by_status'] or 0}"
    )
    slow = {cause: n for cause, n in details["slow_jobs_by_cause"].items() if cause != "on time"}
    print(f"jobs slower than {slo.ON_TIME_MS:g} ms, by the window their wait overlapped: {slow or 'none'}")
    print(f"execution environments alive after the run: {details['environments_after_run']}")
    if "fired_after_due_ms" in details["cron_herd"]:
        print(f"crons fired after their due second (ms, p50/p99/max): {details['cron_herd']['fired_after_due_ms']}")
    for marker in details["events"]:
        print(f"  t={marker['at']:5.1f}s {marker['name']}: {marker['note']}")


def _cron_herd(context: RunContext) -> dict[str, Any]:
    """The jobs the herd's schedules became (ids found by their schedule name), against how many were due."""
    if not context.cron_herd:
        return {"ids": [], "expected": 0, "fired": 0, "not_fired": 0}
    records = herd_records(context.platform, context.cron_herd["prefix"])
    ids = [record["pk"]["S"].removeprefix("job#") for record in records]
    expected = context.cron_herd["expected"]
    return {
        **{k: v for k, v in context.cron_herd.items() if k != "prefix"},
        "ids": ids,
        "fired": len(ids),
        "not_fired": max(0, expected - len(ids)),
    }


if __name__ == "__main__":
    sys.exit(main())
