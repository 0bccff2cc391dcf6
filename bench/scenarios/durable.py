"""`make durable`: what durable jobs cost, against the same work done as plain jobs, in one run.

    make durable                    # 10 cycles, each 3 tens of each cost kind and 5 samples of each wait
    make durable ARGS="--quick"     # 2 cycles of one ten and 2 samples each: a smoke run
    make durable ARGS="--cycles 9 --tens 3 --samples 5 --port 4605"

The work is ten trivial units (each returns a small dict; bench/durable_jobs), done three ways:
- durable: one `bench-ten-steps` job, its ten units `context.step`s (one invoke of the jobs function
  and one journal write each);
- chained: ten `bench-trivial` jobs one after another by callbacks. A callback's body cannot carry an
  `on_success` of its own (the API refuses it: a callback is a job's spec and options, nothing more),
  so a chain of ten cannot be enqueued up front: it is five links of a job and its `on_success`
  callback, the bench enqueuing the next link once the last one's callback has finished (the time the
  bench takes to notice is in the chain's end-to-end time, and out of its "hop");
- independent: ten `bench-trivial` jobs enqueued at once, run side by side.
And two waits, each a durable job (a step, the wait, a step):
- sleep: the example package's `nap` of 2 s; its resume lateness is the start of the step after the
  sleep less the sleep's due time (its start + 2 s);
- event: `bench-wait`, which waits for the event `bench.go` naming its run; once the job is `waiting`,
  the bench sends the event (POST /v1/events); the latency is the start of the step after the wait
  less the moment the POST answered 202.

Starts its own embedded stack on --port (ministack, its sidecars, cdk deploy with examples/jobs and
bench/durable_jobs), runs one of each kind to warm every environment, then cycles of rounds: idle
(nothing enqueued: the stack's own background) and one round of each kind, their order rotated each
cycle so the machine's load falls on all alike (bench/scenarios/fence.py's rounds and readings).
Per kind (definitions: docs/benchmark.md "Durable jobs"):
- store writes, store reads and queue requests per step or job (the fault proxy's and the status
  cache's counts, less the idle rounds' rate), by operation; and each job's requests on its own record;
- CPU ms per step or job of the emulator, its sidecars, and the worker, API and jobs function
  environments (/proc), less the idle rate;
- the whole ten's end-to-end time (the first enqueue to the last finish, from the records), and the hop
  between one unit's finish and the next one's start (durable: step to step; chained: job to callback);
- the waits' latencies, p50/p90.
Figures go to stdout and .corral/durable.json.
"""

from __future__ import annotations

import argparse
import itertools
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests

from bench.durable_jobs.steps import EVENT, STEPS
from bench.lib import report
from bench.lib.slo import percentile
from bench.scenarios import fence
from local.deploy import EXAMPLE_JOBS
from local.ministack import STATE
from local.platform import EmbeddedStack, embedded_stack
from shared import settings
from shared.store.jobs import job_items

RESULT = STATE / "durable.json"
JOBS_PACKAGES = f"{EXAMPLE_JOBS},bench/durable_jobs"
DURABLE, CHAINED, INDEPENDENT, SLEEP, EVENT_WAIT = "durable", "chained", "independent", "sleep", "event"
COST_KINDS = (DURABLE, CHAINED, INDEPENDENT)
WAIT_KINDS = (SLEEP, EVENT_WAIT)
KINDS = (*COST_KINDS, *WAIT_KINDS)
SLEEP_SECONDS = 2
STORE_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")
STORE_READS = ("GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems")
FINISH_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class DurableRound:
    """One round as fence measures it, with what this scenario needs besides: each unit's jobs (a ten's,
    in the order they ran; a wait's one job), when each event's POST answered, each job's requests on its
    own record."""

    measured: fence.Round
    units: tuple[tuple[str, ...], ...] = ()
    answered_at: dict[str, float] = field(default_factory=dict)
    record_requests: dict[str, int] = field(default_factory=dict)


# --- the arithmetic (pure: tests/unit/bench/test_durable_bench.py) ---


def request_kinds(calls: Mapping[str, float]) -> dict[str, float]:
    """Requests by service.operation, summed as store writes, store reads and queue requests."""
    totals = {"store_writes": 0.0, "store_reads": 0.0, "queue_requests": 0.0}
    for name, count in calls.items():
        service, _, operation = name.partition(".")
        if service == "sqs":
            totals["queue_requests"] += count
        elif service == "dynamodb" and operation in STORE_WRITES:
            totals["store_writes"] += count
        elif service == "dynamodb" and operation in STORE_READS:
            totals["store_reads"] += count
    return totals


def work_of(kind: str) -> int:
    """The units of work one unit of a kind is: ten steps or ten jobs; a wait's one job."""
    return STEPS if kind in COST_KINDS else 1


def _net(
    rounds: Sequence[DurableRound], reading: Callable[[fence.Round], Mapping[str, float]], idle: Mapping[str, float]
) -> dict[str, float]:
    seconds = sum(r.measured.seconds for r in rounds)
    gross: dict[str, float] = {}
    for r in rounds:
        for name, value in reading(r.measured).items():
            gross[name] = gross.get(name, 0.0) + value
    return {name: value - idle.get(name, 0.0) * seconds for name, value in gross.items()}


def _per(total: float, count: int, digits: int = 2) -> float | None:
    return round(total / count, digits) if count else None


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def whole_ms(unit: Sequence[str], rows: Mapping[str, fence.measure.JobRow]) -> float | None:
    """A unit's end-to-end time: its first job's enqueue to its last one's finish (None if one did not finish)."""
    starts = [row.enqueued_at if (row := rows.get(job_id)) else None for job_id in unit]
    ends = [row.finished_at if (row := rows.get(job_id)) else None for job_id in unit]
    if not unit or None in starts or None in ends:
        return None
    return (max(e for e in ends if e is not None) - min(s for s in starts if s is not None)) * 1000


def step_hops_ms(steps: Sequence[Mapping[str, Any]]) -> list[float]:
    """The gaps between one step's finish and the next one's start, in a job view's `steps` (in order)."""
    return [
        (after["started_at"] - before["finished_at"]) * 1000
        for before, after in itertools.pairwise(steps)
        if after.get("started_at") is not None and before.get("finished_at") is not None
    ]


def callback_hops_ms(unit: Sequence[str], rows: Mapping[str, fence.measure.JobRow]) -> list[float]:
    """In a chain of links (a job, its callback, the next job, ...): each callback's start less its
    parent's finish, the hop the platform makes (the next link's is the bench's)."""
    hops = []
    for parent, callback in zip(unit[0::2], unit[1::2], strict=False):
        first, second = rows.get(parent), rows.get(callback)
        if first and second and first.finished_at is not None and second.started_at is not None:
            hops.append((second.started_at - first.finished_at) * 1000)
    return hops


def _step(view: Mapping[str, Any], step_id: str) -> Mapping[str, Any] | None:
    return next((step for step in view.get("steps") or () if step.get("id") == step_id), None)


def sleep_lateness_ms(
    view: Mapping[str, Any], seconds: float, sleep_step: str = "nap", after: str = "after"
) -> float | None:
    """How late the step after a sleep started: its start less the sleep's due time (the sleep's start
    + its seconds: the worker records the sleep, and its `until`, at one moment)."""
    slept, resumed = _step(view, sleep_step), _step(view, after)
    if not slept or not resumed or slept.get("started_at") is None or resumed.get("started_at") is None:
        return None
    return (resumed["started_at"] - (slept["started_at"] + seconds)) * 1000


def event_latency_ms(view: Mapping[str, Any], answered_at: float, after: str = "after") -> float | None:
    """The start of the step after a wait less when the event's POST answered 202."""
    resumed = _step(view, after)
    if not resumed or resumed.get("started_at") is None:
        return None
    return (resumed["started_at"] - answered_at) * 1000


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    return {
        "samples": len(values),
        "p50_ms": _ms(percentile(list(values), 50)),
        "p90_ms": _ms(percentile(list(values), 90)),
        "min_ms": _ms(min(values)) if values else None,
        "max_ms": _ms(max(values)) if values else None,
        "values_ms": sorted(round(value) for value in values),
    }


def kind_figures(
    kind: str,
    rounds: Sequence[DurableRound],
    rows: Mapping[str, fence.measure.JobRow],
    views: Mapping[str, Mapping[str, Any]],
    idle_cpu: Mapping[str, float],
    idle_calls: Mapping[str, float],
) -> dict[str, Any]:
    """One kind's figures, per unit of work (a step or a job), less the stack's idle background."""
    mine = [r for r in rounds if r.measured.kind == kind]
    units = [unit for r in mine for unit in r.units]
    work = len(units) * work_of(kind)
    jobs = [job_id for unit in units for job_id in unit]
    cpu = _net(mine, lambda r: r.cpu_seconds, idle_cpu)
    calls = _net(mine, lambda r: {name: float(count) for name, count in r.calls.items()}, idle_calls)
    own = [count for r in mine for count in r.record_requests.values()]
    if kind == DURABLE:
        hops = [hop for unit in units for hop in step_hops_ms(views.get(unit[0], {}).get("steps") or ())]
    elif kind == CHAINED:
        hops = [hop for unit in units for hop in callback_hops_ms(unit, rows)]
    else:
        hops = []
    wholes = [ms for unit in units if (ms := whole_ms(unit, rows)) is not None]
    return {
        "kind": kind,
        "units": len(units),
        "work": work,
        "jobs": len(jobs),
        "not_succeeded": sum(1 for job_id in jobs if (row := rows.get(job_id)) is None or row.status != "succeeded"),
        **{f"{name}_per_work": _per(value, work) for name, value in request_kinds(calls).items()},
        "requests_per_work": {name: per for name, value in sorted(calls.items()) if (per := _per(value, work))},
        "record_requests_per_job": _per(sum(own), len(own)),
        "cpu_ms_per_work": {name: _per(value * 1000, work, 1) for name, value in cpu.items()},
        "cpu_ms_per_work_total": _per(sum(cpu.values()) * 1000, work, 1),
        "whole_p50_ms": _ms(percentile(wholes, 50)),
        "whole_p90_ms": _ms(percentile(wholes, 90)),
        "hop_p50_ms": _ms(percentile(hops, 50)),
        "hop_p90_ms": _ms(percentile(hops, 90)),
    }


def wait_latencies(
    rounds: Sequence[DurableRound], views: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, float | int | None]]:
    late = [
        ms
        for r in rounds
        if r.measured.kind == SLEEP
        for unit in r.units
        if (ms := sleep_lateness_ms(views.get(unit[0], {}), SLEEP_SECONDS)) is not None
    ]
    after_event = [
        ms
        for r in rounds
        if r.measured.kind == EVENT_WAIT
        for job_id, at in r.answered_at.items()
        if (ms := event_latency_ms(views.get(job_id, {}), at)) is not None
    ]
    return {"sleep_resume_lateness": spread(late), "event_to_resume": spread(after_event)}


def ratios(figures: Mapping[str, Mapping[str, Any]], of: str, to: str) -> dict[str, float | None]:
    """Kind `of`'s figures over kind `to`'s, measured in the same run."""
    names = (
        "store_writes_per_work",
        "store_reads_per_work",
        "queue_requests_per_work",
        "cpu_ms_per_work_total",
        "whole_p50_ms",
    )
    return {
        name: round(mine / theirs, 2)
        if (mine := figures[of].get(name)) is not None and (theirs := figures[to].get(name))
        else None
        for name in names
    }


# --- driving the stack ---


class Client:
    """The API, as a customer calls it: enqueue, send an event, read a job's view."""

    def __init__(self, stack: EmbeddedStack) -> None:
        self._url = stack.platform.api_url
        self._session = requests.Session()
        self._session.headers["Authorization"] = f"Bearer {stack.platform.api_key}"

    def enqueue(self, job_type: str, payload: Mapping[str, Any], **fields: Any) -> str:
        answer = self._session.post(
            f"{self._url}/v1/jobs", json={"type": job_type, "payload": payload, **fields}, timeout=30
        )
        answer.raise_for_status()
        return str(answer.json()["id"])

    def send_event(self, name: str, data: Mapping[str, Any], event_id: str) -> float:
        """Sends the event; the moment it answered 202."""
        answer = self._session.post(
            f"{self._url}/v1/events", json={"name": name, "data": data, "id": event_id}, timeout=30
        )
        answered = time.time()
        answer.raise_for_status()
        return answered

    def view(self, job_id: str) -> dict[str, Any]:
        answer = self._session.get(f"{self._url}/v1/jobs/{job_id}", timeout=30)
        answer.raise_for_status()
        return dict(answer.json())


def _wait_for(dynamodb: Any, ids: list[str], statuses: Iterable[str], timeout: float = FINISH_TIMEOUT_SECONDS) -> bool:
    wanted = tuple(statuses)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = fence.job_rows(dynamodb, ids)
        if all((row := rows.get(job_id)) and row.status in wanted for job_id in ids):
            return True
        time.sleep(0.05)
    print(f"  not all of {len(ids)} jobs reached {wanted} within {timeout:.0f} s", flush=True)
    return False


def _callback_of(dynamodb: Any, job_id: str, timeout: float = FINISH_TIMEOUT_SECONDS) -> str | None:
    """The id of the job's on_success callback, once it is enqueued (the record names it)."""
    name = job_items.callback_sent_attribute("on_success")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        item = (
            dynamodb.get_item(
                TableName=settings.TABLE_NAME, Key={"pk": {"S": f"job#{job_id}"}}, ProjectionExpression=name
            ).get("Item")
            or {}
        )
        if name in item:
            return str(item[name]["S"])
        time.sleep(0.05)
    return None


def run_unit(kind: str, client: Client, dynamodb: Any, samples: int) -> tuple[list[tuple[str, ...]], dict[str, float]]:
    """One unit of `kind` (a ten, or `samples` waits side by side), run to its end: its jobs, and for
    events when each POST answered."""
    final = fence.measure.FINAL_STATUSES
    if kind == DURABLE:
        unit = (client.enqueue("bench-ten-steps", {}),)
        _wait_for(dynamodb, list(unit), final)
        return [unit], {}
    if kind == INDEPENDENT:
        unit = tuple(client.enqueue("bench-trivial", {"n": n}) for n in range(STEPS))
        _wait_for(dynamodb, list(unit), final)
        return [unit], {}
    if kind == CHAINED:
        chain: list[str] = []
        for n in range(0, STEPS, 2):
            parent = client.enqueue(
                "bench-trivial", {"n": n}, on_success={"type": "bench-trivial", "payload": {"n": n + 1}}
            )
            callback = _callback_of(dynamodb, parent)
            chain += [parent, callback] if callback else [parent]
            if callback is None or not _wait_for(dynamodb, [callback], final):
                break
        return [tuple(chain)], {}
    if kind == SLEEP:
        naps = [client.enqueue("nap", {"seconds": SLEEP_SECONDS}) for _ in range(samples)]
        _wait_for(dynamodb, naps, final)
        return [(job_id,) for job_id in naps], {}
    runs = {client.enqueue("bench-wait", {"run": run}): run for run in (uuid.uuid4().hex for _ in range(samples))}
    _wait_for(dynamodb, list(runs), ("waiting", *final))
    answered = {job_id: client.send_event(EVENT, {"run": run}, f"go-{run}") for job_id, run in runs.items()}
    _wait_for(dynamodb, list(runs), final)
    return [(job_id,) for job_id in runs], answered


def _record_requests(stack: EmbeddedStack, ids: Iterable[str]) -> dict[str, int]:
    chaos = stack.platform.chaos
    assert chaos is not None
    return {job_id: len(chaos.store_requests(job_id)) for job_id in ids}


def run_round(stack: EmbeddedStack, kind: str, tens: int, samples: int, idle_seconds: float) -> DurableRound:
    client = Client(stack)
    dynamodb = stack.platform.aws("dynamodb")
    units: list[tuple[str, ...]] = []
    answered: dict[str, float] = {}

    def work() -> tuple[list[str], int]:
        if kind == fence.IDLE:
            time.sleep(idle_seconds)
            return [], 0
        for _ in range(tens if kind in COST_KINDS else 1):
            done, times = run_unit(kind, client, dynamodb, samples)
            units.extend(done)
            answered.update(times)
        time.sleep(0.3)  # the last outcome's writes
        return [job_id for unit in units for job_id in unit], 0

    measured = fence.measured_round(stack, kind, work, functions=(settings.JOBS_FUNCTION,))
    return DurableRound(measured, tuple(units), answered, _record_requests(stack, measured.job_ids))


def run(stack: EmbeddedStack, args: argparse.Namespace) -> dict[str, Any]:
    cycles, tens, samples = (2, 1, 2) if args.quick else (args.cycles, args.tens, args.samples)
    began = time.time()
    print("warm-up: one of each kind", flush=True)
    for kind in KINDS:
        run_round(stack, kind, 1, 1, 0)
    rounds: list[DurableRound] = []
    for cycle in range(cycles):
        for kind in fence.cycle_order(cycle, KINDS):
            done = run_round(stack, kind, tens, samples, args.idle_seconds)
            rounds.append(done)
            cpu = sum(done.measured.cpu_seconds.values()) * 1000
            print(
                f"cycle {cycle + 1}/{cycles} {kind:<11} {len(done.measured.job_ids):>3} jobs in "
                f"{done.measured.seconds:6.2f} s, CPU {cpu:7.0f} ms",
                flush=True,
            )
    client = Client(stack)
    ids = [job_id for r in rounds for job_id in r.measured.job_ids]
    rows = fence.job_rows(stack.platform.aws("dynamodb"), ids)
    durable_ids = {unit[0] for r in rounds if r.measured.kind in (DURABLE, *WAIT_KINDS) for unit in r.units}
    views = {job_id: client.view(job_id) for job_id in durable_ids}
    measured = [r.measured for r in rounds]
    idle_cpu = fence.idle_rate(measured)
    idle_calls = fence.idle_rate(measured, of=lambda r: {name: float(count) for name, count in r.calls.items()})
    figures = {kind: kind_figures(kind, rounds, rows, views, idle_cpu, idle_calls) for kind in COST_KINDS}
    return {
        "cycles": cycles,
        "tens_per_round": tens,
        "wait_samples_per_round": samples,
        "load_average": open("/proc/loadavg").read().split()[:3],
        "idle_cpu_ms_per_second": {name: round(value * 1000, 1) for name, value in idle_cpu.items()},
        "idle_requests_per_second": {name: round(value, 2) for name, value in idle_calls.items()},
        "kinds": figures,
        "durable_over_chained": ratios(figures, DURABLE, CHAINED),
        "durable_over_independent": ratios(figures, DURABLE, INDEPENDENT),
        "waits": wait_latencies(rounds, views),
        "worker_hand_backs": _hand_backs(stack, began),
    }


def _hand_backs(stack: EmbeddedStack, since_epoch: float) -> dict[str, int] | None:
    """The worker's hand-backs by reason since then; None when its log group is not there to read."""
    logs = stack.platform.aws("logs")
    try:
        return fence.measure.hand_backs(logs, _worker_log_group(stack), since_epoch)
    except logs.exceptions.ResourceNotFoundException:
        return None


def _worker_log_group(stack: EmbeddedStack) -> str:
    """The worker's log group, as the stack configured it (bench/scenarios/run.py reads it the same way)."""
    worker = stack.platform.aws("lambda").get_function_configuration(FunctionName=settings.WORKER_FUNCTION)
    return str(worker.get("LoggingConfig", {}).get("LogGroup") or f"/aws/lambda/{settings.WORKER_FUNCTION}")


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="make durable", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="2 cycles, one ten of each kind and 2 samples of each wait"
    )
    parser.add_argument("--cycles", type=int, default=10, help="cycles of an idle round and one round of each kind")
    parser.add_argument("--tens", type=int, default=3, help="tens of each cost kind in a round, one after another")
    parser.add_argument("--samples", type=int, default=5, help="waits of each kind in a round, side by side")
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="how long each idle round lasts")
    parser.add_argument("--port", type=int, default=4605, help="port of the scenario's own emulator")
    return parser.parse_args(argv)


def _cell(value: object, width: int = 13) -> str:
    return f"{'-' if value is None else value:>{width}}"


def _print(result: Mapping[str, Any]) -> None:
    kinds = result["kinds"]
    print("\n" + f"{'per step (durable) or job':<36}" + "".join(_cell(kind) for kind in COST_KINDS))
    for name, value in kinds[DURABLE].items():
        if not isinstance(value, dict) and name != "kind":
            print(f"{name:<36}" + "".join(_cell(kinds[kind][name]) for kind in COST_KINDS))
    for group in ("requests_per_work", "cpu_ms_per_work"):
        for name in dict.fromkeys(name for kind in COST_KINDS for name in kinds[kind][group]):
            cells = "".join(_cell(kinds[kind][group].get(name)) for kind in COST_KINDS)
            print(f"{'  ' + name:<36}{cells}")
    lines = {name: result[name] for name in ("durable_over_chained", "durable_over_independent")} | {
        **result["waits"],
        "the worker's hand-backs, by reason": result["worker_hand_backs"],
        "idle CPU ms per second": result["idle_cpu_ms_per_second"],
        "load average at the end": result["load_average"],
    }
    for label, value in lines.items():
        print(f"{label}: {value}")


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the emulator
    with embedded_stack(args.port, STATE / "durable", jobs=JOBS_PACKAGES, announce=True) as stack:
        result = run(stack, args)
    result["command"] = "python -m bench.scenarios.durable " + " ".join(argv if argv is not None else sys.argv[1:])
    _print(result)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    report.write_json(RESULT, result)
    print(f"(the figures also in {RESULT}, with the command)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
