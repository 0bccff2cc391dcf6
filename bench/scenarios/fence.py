"""`make fence`: what a customer's job costs run in its own function, against run in the worker's process.

    make fence                     # 6 cycles of 20 s rounds at 4 jobs/s
    make fence ARGS="--quick"      # 2 cycles of 10 s rounds: a smoke run
    make fence ARGS="--cycles 9 --round-seconds 30 --rate 4 --port 4591"

The options of docs/decisions/customer-code-fence.md, doing the same work (return the payload):
- in-process (option b): the built-in `echo` job, run inside the worker's process;
- separate (option a's prototype on today's code): a `lambda` job whose function, `fence-echo`,
  returns its input: the job's code in its own function, invoked synchronously by the worker, which
  keeps the claim, the outcome write and the secrets;
- kept-client: the same invoke from a job type of bench/fence_jobs that keeps its Lambda client for
  the environment's life, as option (a) built into the platform would; the `lambda` type builds a
  client for each invoke (also measured alone: `lambda_client_build_cpu_ms`). Since option (a) is
  built, bench/fence_jobs is a customer's package like any other and `fence-invoke` runs in the jobs
  function: this kind measures two hops (worker -> jobs function -> fence-echo) until it is changed
  to a customer type that returns its payload (docs/decisions/customer-code-fence.md, "Figures").

Starts its own embedded stack on --port (ministack, its sidecars, cdk deploy with examples/jobs and
bench/fence_jobs) with `fence-echo` allowed to the demo tenant (corral:lambda_targets), and creates
that function in the emulator after the deploy, as the end-to-end tests create theirs: the local
profile deploys no target function. After a warm-up of each kind (the first job of each is
reported: the target's first invoke starts its environment), it runs cycles of rounds: idle (nothing
enqueued: the stack's own background), then one round of each kind, their order rotated each cycle
so the machine's load falls on all alike. In a round, one kind's jobs are enqueued at --rate for
--round-seconds, and the round ends when they have all finished.

Per kind (definitions: docs/benchmark.md "A fence for customer code"):
- enqueue-to-run p50/p99 (started_at - enqueued_at of the job's record) and run-to-finish p50/p99
  (finished_at - started_at: the job's duration as the worker recorded it);
- CPU milliseconds per job of the emulator, its sidecars and the worker, API and fence-echo
  environments (/proc, as `make drain` reads it), less the idle rounds' rate over the round's length;
- requests per job that reached the store or the queue (the fault proxy's and status cache's counts)
  and invokes per job of fence-echo (its own log line per invoke): against in-process, what running
  the job in its own function adds in AWS calls.
Figures go to stdout and .corral/fence.json.
"""

from __future__ import annotations

import argparse
import io
import json
import signal
import statistics
import sys
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from bench.lib import measure
from bench.lib.load import EnqueueLoad
from bench.lib.slo import percentile
from local.deploy import DEMO_TENANT, EXAMPLE_JOBS, function_environment
from local.ministack import ACCOUNT, STATE, worker_pids
from local.platform import EmbeddedStack, embedded_stack
from shared import settings
from shared.aws import lambda_clients

RESULT = STATE / "fence.json"
IN_PROCESS, SEPARATE, KEPT_CLIENT, IDLE = "in-process", "separate", "kept-client", "idle"
KINDS = (IN_PROCESS, SEPARATE, KEPT_CLIENT)
JOBS_PACKAGES = f"{EXAMPLE_JOBS},bench/fence_jobs"  # as `make up` deploys, and the kept-client job type
# Not `corral-...`: those names are the stack's own, which no Lambda target may match.
TARGET = "fence-echo"
TARGET_SOURCE = """
import json


def handler(event, context):
    # One line per invoke, naming the job: the benchmark counts each job's invokes.
    caller = event.get("corral") or {}
    print(json.dumps({"fence_invoke": caller.get("job_id")}))
    return {key: value for key, value in event.items() if key != "corral"}
"""
INVOKE_MARK = "fence_invoke"
FINISH_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class Round:
    """One round: one kind's jobs enqueued at the rate, until they had all finished (or nothing, idle)."""

    kind: str
    seconds: float  # from the CPU reading before the first enqueue to the one after the last job finished
    job_ids: tuple[str, ...]
    failed_enqueues: int
    cpu_seconds: dict[str, float]  # used during the round, by process group
    calls: dict[str, int]  # requests that reached the store or the queue, by service.operation


@dataclass(frozen=True)
class KindFigures:
    kind: str
    rounds: int
    jobs: int
    failed_enqueues: int
    not_succeeded: int
    enqueue_to_run_p50_ms: float | None
    enqueue_to_run_p99_ms: float | None
    run_to_finish_p50_ms: float | None
    run_to_finish_p99_ms: float | None
    cpu_ms_per_job: dict[str, float]  # by process group, less the idle rate
    cpu_ms_per_job_total: float | None  # less the idle rate
    cpu_ms_per_job_gross: float | None  # with the stack's idle background
    store_and_queue_calls_per_job: float | None
    lambda_invokes_per_job: float | None


# --- the arithmetic (pure: tests/unit/bench/test_bench.py) ---


def used(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """What each counter gained between two readings; a counter first seen in `after` started at 0."""
    return {name: after[name] - before.get(name, 0.0) for name in after}


def idle_rate(rounds: Iterable[Round], of: Callable[[Round], Mapping[str, float]] | None = None) -> dict[str, float]:
    """CPU seconds per second of each group in the idle rounds: the stack's background. `of`: another
    reading of a round to take the rate of (its requests)."""
    idle = [r for r in rounds if r.kind == IDLE]
    seconds = sum(r.seconds for r in idle)
    if not seconds:
        return {}
    totals: dict[str, float] = {}
    for r in idle:
        for name, value in (r.cpu_seconds if of is None else of(r)).items():
            totals[name] = totals.get(name, 0.0) + value
    return {name: value / seconds for name, value in totals.items()}


def _round_ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _per_job(total: float, jobs: int, digits: int = 2) -> float | None:
    return round(total / jobs, digits) if jobs else None


def summarise(
    kind: str,
    rounds: Iterable[Round],
    rows: Mapping[str, measure.JobRow],
    invokes: Mapping[str, int],
    background: Mapping[str, float],
) -> KindFigures:
    """One kind's figures from its rounds, the job records, each job's invokes of the target and the
    idle CPU rate by group (`idle_rate`)."""
    mine = [r for r in rounds if r.kind == kind]
    ids = [job_id for r in mine for job_id in r.job_ids]
    found = [row for job_id in ids if (row := rows.get(job_id)) is not None]
    waits = [
        (r.started_at - r.enqueued_at) * 1000 for r in found if r.started_at is not None and r.enqueued_at is not None
    ]
    runs = [
        (r.finished_at - r.started_at) * 1000 for r in found if r.finished_at is not None and r.started_at is not None
    ]
    seconds = sum(r.seconds for r in mine)
    gross: dict[str, float] = {}
    for r in mine:
        for name, value in r.cpu_seconds.items():
            gross[name] = gross.get(name, 0.0) + value
    net = {name: value - background.get(name, 0.0) * seconds for name, value in gross.items()}
    calls = sum(sum(r.calls.values()) for r in mine)
    jobs = len(ids)
    return KindFigures(
        kind=kind,
        rounds=len(mine),
        jobs=jobs,
        failed_enqueues=sum(r.failed_enqueues for r in mine),
        not_succeeded=sum(1 for job_id in ids if (row := rows.get(job_id)) is None or row.status != "succeeded"),
        enqueue_to_run_p50_ms=_round_ms(percentile(waits, 50)),
        enqueue_to_run_p99_ms=_round_ms(percentile(waits, 99)),
        run_to_finish_p50_ms=_round_ms(percentile(runs, 50)),
        run_to_finish_p99_ms=_round_ms(percentile(runs, 99)),
        cpu_ms_per_job={name: _per_job(value * 1000, jobs) or 0.0 for name, value in net.items()},
        cpu_ms_per_job_total=_per_job(sum(net.values()) * 1000, jobs),
        cpu_ms_per_job_gross=_per_job(sum(gross.values()) * 1000, jobs),
        store_and_queue_calls_per_job=_per_job(calls, jobs),
        lambda_invokes_per_job=_per_job(sum(invokes.get(job_id, 0) for job_id in ids), jobs),
    )


def _ratio(other: float | None, in_process: float | None) -> float | None:
    return round(other / in_process, 2) if other is not None and in_process else None


def _difference(other: float | None, in_process: float | None) -> float | None:
    return None if other is None or in_process is None else round(other - in_process, 2)


def compare(in_process: KindFigures, other: KindFigures) -> dict[str, dict[str, float | None]]:
    """A kind run in its own function (`other`) against in-process: the ratio and the difference of
    each figure. The difference of AWS calls per job counts the invokes too (in-process jobs invoke
    nothing)."""
    figures = (
        "enqueue_to_run_p50_ms",
        "enqueue_to_run_p99_ms",
        "run_to_finish_p50_ms",
        "run_to_finish_p99_ms",
        "cpu_ms_per_job_total",
        "cpu_ms_per_job_gross",
    )
    ratio = {name: _ratio(getattr(other, name), getattr(in_process, name)) for name in figures}
    extra: dict[str, float | None] = {
        name: _difference(getattr(other, name), getattr(in_process, name)) for name in figures
    }
    calls = _difference(other.store_and_queue_calls_per_job, in_process.store_and_queue_calls_per_job)
    invokes = _difference(other.lambda_invokes_per_job, in_process.lambda_invokes_per_job)
    extra["store_and_queue_calls_per_job"] = calls
    extra["lambda_invokes_per_job"] = invokes
    extra["aws_calls_per_job"] = None if calls is None or invokes is None else round(calls + invokes, 2)
    return {"ratio": ratio, "extra": extra}


def cycle_order(cycle: int, kinds: tuple[str, ...] = KINDS) -> tuple[str, ...]:
    """The rounds of one cycle: idle first, then the kinds, rotated by one each cycle (over three
    cycles each of three kinds has run first, second and third)."""
    turn = cycle % len(kinds)
    return (IDLE, *kinds[turn:], *kinds[:turn])


def invokes_by_job(lines: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many times the target was invoked for each job, from its log lines."""
    counts: dict[str, int] = {}
    for line in lines:
        job_id = line.get(INVOKE_MARK)
        if isinstance(job_id, str):
            counts[job_id] = counts.get(job_id, 0) + 1
    return counts


# --- driving the stack ---


def create_target(stack: EmbeddedStack) -> None:
    """fence-echo in the emulator, as tests/e2e/test_customer_work.py creates its target."""
    lambda_ = stack.platform.aws("lambda")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("target.py", TARGET_SOURCE)
    lambda_.create_function(
        FunctionName=TARGET,
        Runtime="python3.11",
        Role=f"arn:aws:iam::{ACCOUNT}:role/fence-echo",
        Handler="target.handler",
        Code={"ZipFile": archive.getvalue()},
        Timeout=30,
    )


def process_groups(stack: EmbeddedStack, functions: Iterable[str] = (TARGET,)) -> dict[str, list[int]]:
    """The processes whose CPU a scenario reads: the emulator, its sidecars, the worker's and the API's
    environments, and those of each of `functions`."""
    assert stack.emulator.process is not None
    groups = {"emulator": [stack.emulator.process.pid]}
    for process in stack.sidecars.processes if stack.sidecars else []:
        name = "status cache" if "local.dax_standin" in process.args else "fault proxy"
        groups[name] = [process.pid]
    endpoint = stack.emulator.endpoint
    groups["worker environments"] = worker_pids(endpoint, settings.WORKER_FUNCTION)
    groups["API environments"] = worker_pids(endpoint, settings.API_FUNCTION)
    for function in functions:
        groups[f"{function} environments"] = worker_pids(endpoint, function)
    return groups


def cpu_reading(
    stack: EmbeddedStack, functions: Iterable[str] = (TARGET,)
) -> tuple[dict[int, float], dict[str, list[int]]]:
    groups = process_groups(stack, functions)
    return {pid: measure.cpu_seconds(pid) for pids in groups.values() for pid in pids}, groups


def store_and_queue_calls(stack: EmbeddedStack) -> dict[str, float]:
    """Requests that reached the store or the queue so far, by service.operation (faults injected left out)."""
    assert stack.platform.chaos is not None
    counts = stack.platform.chaos.stats()["proxy"]
    return {name: float(count) for name, count in counts.items() if not name.endswith(".injected")}


def job_type_of(kind: str) -> tuple[str, Callable[[int], object]]:
    if kind == IN_PROCESS:
        return "echo", lambda n: {"n": n}
    if kind == KEPT_CLIENT:
        return "fence-invoke", lambda n: {"n": n}  # bench/fence_jobs: invokes TARGET
    return "lambda", lambda n: {"function": TARGET, "input": {"n": n}}


def job_rows(dynamodb: Any, ids: Iterable[str]) -> dict[str, measure.JobRow]:
    """The records of these jobs (BatchGetItem: the benchmark's reads stay small, not a Scan)."""
    wanted = list(dict.fromkeys(ids))
    rows: dict[str, measure.JobRow] = {}
    names = {"#status": "status"}
    projection = "pk, #status, attempts, enqueued_at, started_at, finished_at"
    for first in range(0, len(wanted), 100):
        keys = [{"pk": {"S": f"job#{job_id}"}} for job_id in wanted[first : first + 100]]
        request: dict[str, Any] = {
            settings.TABLE_NAME: {"Keys": keys, "ProjectionExpression": projection, "ExpressionAttributeNames": names}
        }
        while request:
            answer = dynamodb.batch_get_item(RequestItems=request)
            for item in answer["Responses"].get(settings.TABLE_NAME, []):
                job_id = item["pk"]["S"].removeprefix("job#")
                rows[job_id] = measure.JobRow(
                    id=job_id,
                    status=item["status"]["S"],
                    attempts=int(item.get("attempts", {"N": "0"})["N"]),
                    enqueued_at=float(item["enqueued_at"]["N"]) if "enqueued_at" in item else None,
                    started_at=float(item["started_at"]["N"]) if "started_at" in item else None,
                    finished_at=float(item["finished_at"]["N"]) if "finished_at" in item else None,
                )
            request = answer.get("UnprocessedKeys") or {}
    return rows


def wait_finished(dynamodb: Any, ids: list[str], timeout: float = FINISH_TIMEOUT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = job_rows(dynamodb, ids)
        if all((row := rows.get(job_id)) and row.status in measure.FINAL_STATUSES for job_id in ids):
            return
        time.sleep(0.25)
    print(f"  not all {len(ids)} jobs finished within {timeout:.0f} s", flush=True)


def measured_round(
    stack: EmbeddedStack,
    kind: str,
    work: Callable[[], tuple[list[str], int]],
    functions: Iterable[str] = (TARGET,),
) -> Round:
    """One round: what `work` (answering the jobs it enqueued and its failed enqueues) cost the processes
    of `process_groups(stack, functions)` in CPU, and the store and queue requests made meanwhile."""
    before, _ = cpu_reading(stack, functions)
    calls_before = store_and_queue_calls(stack)
    began = time.monotonic()
    ids, failed = work()
    after, groups = cpu_reading(stack, functions)
    calls = used(calls_before, store_and_queue_calls(stack))
    return Round(
        kind=kind,
        seconds=round(time.monotonic() - began, 3),
        job_ids=tuple(ids),
        failed_enqueues=failed,
        cpu_seconds=measure.group_cpu(before, after, groups),
        calls={name: int(value) for name, value in calls.items() if value},
    )


def run_round(stack: EmbeddedStack, kind: str, seconds: float, rate: float, first_n: int) -> Round:
    platform = stack.platform

    def work() -> tuple[list[str], int]:
        if kind == IDLE:
            time.sleep(seconds)
            return [], 0
        job_type, payload = job_type_of(kind)
        load = EnqueueLoad(
            platform.api_url,
            platform.api_key,
            lambda at: (kind, rate) if at < seconds else None,
            threads=max(4, int(rate)),
            payload=lambda n: payload(first_n + n),
            job_type=job_type,
        )
        load.start()
        load.join()
        ids = [sample.job_id for sample in sorted(load.samples, key=lambda s: s.at) if sample.job_id]
        wait_finished(platform.aws("dynamodb"), ids)
        time.sleep(0.3)  # the last outcome's write and log lines
        return ids, sum(1 for sample in load.samples if sample.status != 202)

    return measured_round(stack, kind, work)


def _target_lines(stack: EmbeddedStack, since_epoch: float) -> list[dict[str, Any]]:
    logs = stack.platform.aws("logs")
    try:
        return measure.log_lines(logs, f"/aws/lambda/{TARGET}", since_epoch, f'"{INVOKE_MARK}"')
    except logs.exceptions.ResourceNotFoundException:
        return []


def lambda_client_build_cpu_ms(stack: EmbeddedStack, times: int = 20) -> float:
    """CPU ms to build the Lambda client a `lambda` job built for each invoke before clients were kept
    (shared/aws/lambda_clients.py, unkept), in this process: median of `times`."""
    build = lambda_clients._client_reading.__wrapped__  # the build itself, past the cache that keeps clients
    spent = []
    with function_environment(stack.aws_env):
        build(32)  # imports and first loads out of the way
        for _ in range(times):
            started = time.process_time()
            build(32)
            spent.append((time.process_time() - started) * 1000)
    return round(statistics.median(spent), 1)


def warm_up(stack: EmbeddedStack, jobs: int, rate: float) -> dict[str, float | None]:
    """Each kind's first jobs, unmeasured but for the first one's run-to-finish: the target function
    has no environment until its first invoke (the worker's and the API's are pre-warmed)."""
    first: dict[str, float | None] = {}
    for kind in KINDS:
        done = run_round(stack, kind, jobs / rate, rate, first_n=0)
        rows = job_rows(stack.platform.aws("dynamodb"), done.job_ids[:1])
        row = rows.get(done.job_ids[0]) if done.job_ids else None
        if row is None or row.started_at is None or row.finished_at is None:
            first[kind] = None
        else:
            first[kind] = round((row.finished_at - row.started_at) * 1000, 1)
    return first


def run(stack: EmbeddedStack, args: argparse.Namespace) -> dict[str, Any]:
    create_target(stack)
    began = time.time()
    print(f"warm-up: {args.warm_jobs} jobs of each kind", flush=True)
    first_run = warm_up(stack, args.warm_jobs, args.rate)
    cycles = 2 if args.quick else args.cycles
    seconds = 10.0 if args.quick else args.round_seconds
    rounds: list[Round] = []
    n = 0
    for cycle in range(cycles):
        for kind in cycle_order(cycle):
            done = run_round(stack, kind, seconds, args.rate, n)
            n += len(done.job_ids) + done.failed_enqueues
            rounds.append(done)
            cpu = sum(done.cpu_seconds.values()) * 1000
            print(
                f"cycle {cycle + 1}/{cycles} {kind:<11} {len(done.job_ids):>4} jobs in {done.seconds:6.2f} s, "
                f"CPU {cpu:7.0f} ms",
                flush=True,
            )
    ids = [job_id for r in rounds for job_id in r.job_ids]
    rows = job_rows(stack.platform.aws("dynamodb"), ids)
    time.sleep(2)  # the target's last log lines
    invokes = invokes_by_job(_target_lines(stack, began))
    background = idle_rate(rounds)
    figures = {kind: summarise(kind, rounds, rows, invokes, background) for kind in KINDS}
    return {
        "rate_per_second": args.rate,
        "round_seconds": seconds,
        "cycles": cycles,
        "idle_cpu_ms_per_second": {name: round(value * 1000, 1) for name, value in background.items()},
        "first_run_to_finish_ms": first_run,
        "kinds": {kind: asdict(value) for kind, value in figures.items()},
        "against_in_process": {kind: compare(figures[IN_PROCESS], figures[kind]) for kind in KINDS[1:]},
        "lambda_client_build_cpu_ms": lambda_client_build_cpu_ms(stack),
    }


def _cell(value: object, width: int = 13) -> str:
    return f"{'-' if value is None else value:>{width}}"


def _print(result: Mapping[str, Any]) -> None:
    kinds = result["kinds"]
    print("\n" + f"{'':<32}" + "".join(_cell(kind) for kind in KINDS))
    for name in (field.name for field in fields(KindFigures)):
        if name not in ("kind", "cpu_ms_per_job"):
            print(f"{name:<32}" + "".join(_cell(kinds[kind][name]) for kind in KINDS))
    for group in dict.fromkeys(name for kind in KINDS for name in kinds[kind]["cpu_ms_per_job"]):
        cells = "".join(_cell(kinds[kind]["cpu_ms_per_job"].get(group)) for kind in KINDS)
        print(f"{'  cpu ms/job: ' + group:<32}{cells}")
    for kind, compared in result["against_in_process"].items():
        print(f"\n{kind + ' against in-process':<32}{'ratio':>13}{'extra':>13}")
        for name, extra in compared["extra"].items():
            print(f"{name:<32}{_cell(compared['ratio'].get(name))}{_cell(extra)}")
    print(f"\nfirst job's run-to-finish (ms), at the warm-up's start: {result['first_run_to_finish_ms']}")
    print(f"idle CPU ms per second: {result['idle_cpu_ms_per_second']}")
    print(f"a lambda job's client build (CPU ms, in this process): {result['lambda_client_build_cpu_ms']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make fence", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="2 cycles of 10 s rounds")
    parser.add_argument("--cycles", type=int, default=6, help="cycles of an idle round and one round of each kind")
    parser.add_argument("--round-seconds", type=float, default=20.0, help="how long each round enqueues")
    parser.add_argument("--rate", type=float, default=4.0, help="enqueues per second in a round")
    parser.add_argument("--warm-jobs", type=int, default=20, help="jobs of each kind before the measured rounds")
    parser.add_argument("--port", type=int, default=4591, help="port of the scenario's own emulator")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the emulator
    targets = [f"{TARGET}={DEMO_TENANT}"]
    with embedded_stack(args.port, STATE / "fence", jobs=JOBS_PACKAGES, lambda_targets=targets, announce=True) as stack:
        result = run(stack, args)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    _print(result)
    print(f"(also in {RESULT})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
