"""`make capacity`: what 6,000 enqueues/s with an 18,000/s midnight burst needs on AWS, and where it breaks.

A fluid model, one step per second: jobs arrive (steady, then the burst), the SQS event
source mapping (ESM) runs `concurrency` batches at a time, the backlog is what arrived and was
not yet served, and a job's wait is the backlog ahead of it over the service rate.

Assumptions (every one is an argument; docs/benchmark.md repeats them):
- Per-invocation durations: a worker batch is `batch_overhead_ms` + `batch_size` x `job_ms`; the
  API handler takes `api_ms` per enqueue. Defaults are AWS-side guesses from the local
  measurements (`make bench`: handler vs bare SendMessage ratio, worker busy per batch) with the
  emulator's overheads removed: a DynamoDB conditional write ~5 ms, an SQS send ~6 ms in-Region.
- ESM standard mode (Lambda developer guide, services-sqs-scaling): starts at 5 concurrent
  batches, adds up to 300 per minute while messages wait, at most MaximumConcurrency (<= 1,000).
  Provisioned mode scales ~3x faster (same page) and keeps `min_pollers` ready.
- Lambda: 1,000 new execution environments per 10 s per function; account concurrency 1,000 by default.
- EventBridge Scheduler: 1,000 target invocations/s by default (throttled = delayed, not dropped).
- API Gateway: 10,000 requests/s account throttle by default (burst 5,000).
- DynamoDB on-demand: 2 writes per job (claim, complete), < 1 KB items = 1 WRU each; a new on-demand
  table serves ~4,000 writes/s at first and doubles its previous peak within ~30 min.
- SQS standard: ~120,000 in-flight messages per queue.
- Faults (`--kill-at`, `--blip-at`, seconds from the burst's start; negative = before it, in the
  steady load): a worker environment dies mid-batch: its `batch_size` jobs come back after
  `killed_batch_returns_s` (the worker keeps its batch hidden for about the running job's
  timeout plus 10 s, renewed at each turn, shared/worker/run/cover.py: 40 s for the default 30 s timeout,
  the same for every message of the batch), and the slot
  cold-starts a new environment (`cold_start_s`). A store blip of `blip_seconds`: first deliveries
  run without a store claim while the store fails (docs/decisions/store-blips.md), so starts go on
  (`blip_blocks_starts` false, the default); true models a claim that the store must grant, where
  jobs arriving in the blip wait for its end, then for the backlog. The ESM keeps its
  concurrency through both (partial-batch answers are not function errors, which would make it
  back off).
- Prices: us-east-1 list prices (x86 Lambda, HTTP API first 300 M, SQS standard, DynamoDB on-demand,
  CloudWatch Logs ingestion), written in PRICES; check the pricing pages before quoting.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass

from shared.settings import ACCOUNT_CONCURRENCY  # the Region's default Lambda quota, as the stack plans with

PRICES = {
    "http_api_per_million_requests": 1.00,
    "lambda_per_million_requests": 0.20,
    "lambda_per_gb_second": 0.0000166667,
    "sqs_per_million_requests": 0.40,  # each 64 KiB chunk of a request counts as one
    "dynamodb_per_million_wru": 0.625,
    "logs_per_gb_ingested": 0.50,
}
ESM_START_BATCHES = 5
ESM_STANDARD_ADD_PER_SECOND = 300 / 60
PROVISIONED_SCALING_SPEEDUP = 3
LAMBDA_ENVIRONMENTS_PER_10S = 1000
SCHEDULER_INVOCATIONS_PER_SECOND = 1000
API_GATEWAY_RPS = 10_000
DYNAMODB_NEW_ON_DEMAND_WRITES = 4000
SQS_IN_FLIGHT_LIMIT = 120_000


@dataclass(frozen=True)
class Inputs:
    steady_rps: float = 6000
    burst_rps: float = 18000
    burst_seconds: int = 60
    batch_size: int = 10
    job_ms: float = 12.0
    batch_overhead_ms: float = 8.0
    api_ms: float = 12.0
    poll_ms: float = 20.0  # a message's wait for a long-polling poller when capacity is free
    max_concurrency: int = 1000  # ESM MaximumConcurrency
    min_pollers_concurrency: int = 0  # provisioned mode: batches kept ready (0 = standard mode)
    memory_gb: float = 1.0
    log_bytes_per_invocation: int = 600  # START/END/REPORT + our one JSON line
    bulk_fraction: float = 0.0  # share of enqueues arriving through /v1/jobs:batch (100 per request)
    blip_seconds: int = 5
    blip_blocks_starts: bool = False
    killed_batch_returns_s: float = 40.0
    cold_start_s: float = 1.0

    @property
    def batch_seconds(self) -> float:
        return (self.batch_overhead_ms + self.batch_size * self.job_ms) / 1000


@dataclass(frozen=True)
class Timeline:
    peak_backlog: float
    backlog_seconds: int  # from the burst's start until nothing waits any more
    peak_concurrency: int
    p99_wait_ms: float
    max_wait_ms: float


def _service_rate(concurrency: float, inputs: Inputs) -> float:
    return concurrency * inputs.batch_size / inputs.batch_seconds


def needed_concurrency(rate: float, inputs: Inputs) -> int:
    return math.ceil(rate * inputs.batch_seconds / inputs.batch_size)


@dataclass(frozen=True)
class Faults:
    """When they happen, in seconds from the burst's start (negative: in the steady load before it)."""

    kill_at: int | None = None
    blip_at: int | None = None


def simulate(
    inputs: Inputs, *, add_per_second: float, before: int = 120, after: int = 300, faults: Faults = Faults()
) -> Timeline:
    """Steady load long enough for the ESM to settle, the burst, then steady again (with `faults`)."""
    concurrency = float(max(ESM_START_BATCHES, inputs.min_pollers_concurrency))
    backlog = 0.0
    waits: list[tuple[float, float]] = []  # (wait ms, jobs that waited it)
    peak_backlog, peak_concurrency, last_backlog_second = 0.0, concurrency, before
    burst_end = before + inputs.burst_seconds
    blip = (
        (before + faults.blip_at, before + faults.blip_at + inputs.blip_seconds) if faults.blip_at is not None else None
    )
    kill = before + faults.kill_at if faults.kill_at is not None else None
    for second in range(before + inputs.burst_seconds + after):
        arriving = inputs.burst_rps if before <= second < burst_end else inputs.steady_rps
        wanted = needed_concurrency(arriving, inputs) + (1 if backlog else 0)
        if backlog > 0 or concurrency < wanted:  # the ESM scales while messages wait
            concurrency = min(inputs.max_concurrency, concurrency + add_per_second)
        service = _service_rate(concurrency, inputs)
        blip_left = blip[1] - second if blip and blip[0] <= second < blip[1] and inputs.blip_blocks_starts else 0
        if second == kill:  # one slot cold-starts a new environment; its batch waits out its visibility
            service -= _service_rate(min(1.0, inputs.cold_start_s), inputs)
            waits.append((1000 * inputs.killed_batch_returns_s, inputs.batch_size))
        queue_wait = blip_left + (backlog / service if service else math.inf)
        waits.append((1000 * queue_wait + inputs.poll_ms + inputs.batch_size * inputs.job_ms / 2, arriving))
        backlog = max(0.0, backlog + arriving - (0.0 if blip_left else service))
        peak_backlog = max(peak_backlog, backlog)
        peak_concurrency = max(peak_concurrency, concurrency)
        if backlog > 0:
            last_backlog_second = second + 1
    return Timeline(
        peak_backlog=round(peak_backlog),
        backlog_seconds=last_backlog_second - before,
        peak_concurrency=math.ceil(peak_concurrency),
        p99_wait_ms=round(_weighted_percentile(waits, 99), 1),
        max_wait_ms=round(max(wait for wait, _ in waits), 1),
    )


def _weighted_percentile(values: list[tuple[float, float]], pct: float) -> float:
    total = sum(weight for _, weight in values)
    running = 0.0
    for value, weight in sorted(values):
        running += weight
        if running >= total * pct / 100:
            return value
    return values[-1][0]


def cost_per_million_jobs(inputs: Inputs) -> dict[str, float]:
    million = 1_000_000
    single = 1 - inputs.bulk_fraction
    api_requests = million * (single + inputs.bulk_fraction / 100)
    worker_invocations = million / inputs.batch_size
    gb_seconds = inputs.memory_gb * (
        million * single * inputs.api_ms / 1000 + worker_invocations * inputs.batch_seconds
    )
    # SQS: the sends (1 per single enqueue, 1 per 10 in bulk), a receive and a batch delete per batch.
    sqs_requests = million * (single + inputs.bulk_fraction / 10) + 2 * worker_invocations
    log_gb = (api_requests + worker_invocations) * inputs.log_bytes_per_invocation / 1e9
    costs = {
        "api_gateway": api_requests / million * PRICES["http_api_per_million_requests"],
        "lambda_requests": (api_requests + worker_invocations) / million * PRICES["lambda_per_million_requests"],
        "lambda_compute": gb_seconds * PRICES["lambda_per_gb_second"],
        "sqs": sqs_requests / million * PRICES["sqs_per_million_requests"],
        "dynamodb_writes": 2 * PRICES["dynamodb_per_million_wru"],
        "cloudwatch_logs": log_gb * PRICES["logs_per_gb_ingested"],
    }
    costs = {name: round(value, 3) for name, value in costs.items()}
    costs["total"] = round(sum(costs.values()), 2)
    return costs


def plan(inputs: Inputs) -> dict[str, object]:
    standard = simulate(inputs, add_per_second=ESM_STANDARD_ADD_PER_SECOND)
    provisioned = simulate(
        inputs,
        add_per_second=ESM_STANDARD_ADD_PER_SECOND * PROVISIONED_SCALING_SPEEDUP,
    )
    prewarmed_inputs = Inputs(
        **{**asdict(inputs), "min_pollers_concurrency": needed_concurrency(inputs.burst_rps, inputs) + 5}
    )
    provisioned_rate = ESM_STANDARD_ADD_PER_SECOND * PROVISIONED_SCALING_SPEEDUP
    prewarmed = simulate(prewarmed_inputs, add_per_second=provisioned_rate)
    faulted = {
        f"{where}, {design}": asdict(
            simulate(
                Inputs(**{**asdict(prewarmed_inputs), "blip_blocks_starts": blocks}),
                add_per_second=provisioned_rate,
                faults=Faults(kill_at=at, blip_at=at + 2),
            )
        )
        for where, at in (("steady", -60), ("burst", 10))
        for design, blocks in (("claim in the store", True), ("start without a claim in a blip", False))
    }
    worker_burst = needed_concurrency(inputs.burst_rps, inputs)
    api_burst = math.ceil(inputs.burst_rps * (1 - inputs.bulk_fraction) * inputs.api_ms / 1000)
    api_requests_burst = inputs.burst_rps * (1 - inputs.bulk_fraction + inputs.bulk_fraction / 100)
    changes = []
    if worker_burst + api_burst > ACCOUNT_CONCURRENCY:
        changes.append(
            f"account concurrency: {worker_burst} worker + {api_burst} API environments at the burst "
            f"> the default {ACCOUNT_CONCURRENCY}: request a quota raise"
        )
    if worker_burst > inputs.max_concurrency:
        changes.append(f"one mapping tops out at {inputs.max_concurrency} batches: shard the queue")
    if standard.p99_wait_ms > 260:
        changes.append(
            f"ESM standard mode ramps +300 batches/min: the burst backs up to {standard.peak_backlog:,} messages "
            f"and enqueue-to-run p99 ~{standard.p99_wait_ms:,.0f} ms; use provisioned mode with minimum pollers "
            f"sized for the burst (p99 ~{prewarmed.p99_wait_ms:,.0f} ms), raised shortly before midnight"
        )
    blocked = faulted["burst, claim in the store"]
    if blocked["p99_wait_ms"] > 260:
        changes.append(
            f"a {inputs.blip_seconds} s store blip in the burst would stop every start if the store had to grant "
            f"each claim: {blocked['peak_backlog']:,} jobs would wait, enqueue-to-run p99 "
            f"~{blocked['p99_wait_ms']:,.0f} ms; "
            f"first deliveries run without a store claim while the store fails (the design), which keeps it at "
            f"~{faulted['burst, start without a claim in a blip']['p99_wait_ms']:,.0f} ms"
        )
    if inputs.killed_batch_returns_s > 60:
        changes.append(
            f"a dead worker environment's batch waits out the visibility timeout "
            f"({inputs.killed_batch_returns_s:g} s): "
            f"too few jobs to move p99, but each waits that long; shorten its messages' visibility at claim"
        )
    if api_requests_burst > API_GATEWAY_RPS:
        changes.append(
            f"API Gateway throttles at {API_GATEWAY_RPS:,} requests/s per account by default: "
            f"{api_requests_burst:,.0f}/s needs a quota raise or bulk enqueue (/v1/jobs:batch, 100 per request)"
        )
    if inputs.burst_rps > SCHEDULER_INVOCATIONS_PER_SECOND:
        changes.append(
            f"EventBridge Scheduler delivers {SCHEDULER_INVOCATIONS_PER_SECOND:,}/s by default: if the burst is crons, "
            f"{inputs.burst_rps * inputs.burst_seconds:,.0f} due at midnight take "
            f"{inputs.burst_rps * inputs.burst_seconds / SCHEDULER_INVOCATIONS_PER_SECOND:,.0f} s to fire; raise the "
            f"quota or fan out (one schedule per tenant or shard enqueueing its crons with SendMessageBatch)"
        )
    if 2 * inputs.burst_rps > DYNAMODB_NEW_ON_DEMAND_WRITES:
        changes.append(
            f"DynamoDB: {2 * inputs.burst_rps:,.0f} writes/s at the burst; a new on-demand table starts near "
            f"{DYNAMODB_NEW_ON_DEMAND_WRITES:,}/s: set warm throughput (or provisioned capacity) for the peak"
        )
    return {
        "inputs": asdict(inputs),
        "worker_concurrency": {
            "steady": needed_concurrency(inputs.steady_rps, inputs),
            "burst": worker_burst,
            "batch_ms": round(inputs.batch_seconds * 1000, 1),
        },
        "api_concurrency_at_burst": api_burst,
        "lambda_scaling_ok": worker_burst + api_burst <= LAMBDA_ENVIRONMENTS_PER_10S,
        "sqs_in_flight_at_burst": worker_burst * inputs.batch_size,
        "sqs_in_flight_ok": worker_burst * inputs.batch_size < SQS_IN_FLIGHT_LIMIT,
        "pollers_by_throughput": math.ceil(inputs.burst_rps * 400 / 5e6),  # ~400-byte messages, ~5 MB/s a poller
        "esm_standard": asdict(standard),
        "esm_provisioned_3x": asdict(provisioned),
        "esm_provisioned_prewarmed": asdict(prewarmed),
        "faults_on_provisioned_prewarmed": faulted,
        "dynamodb_writes_per_second_at_burst": 2 * inputs.burst_rps,
        "cost_per_million_jobs_usd": cost_per_million_jobs(inputs),
        "design_changes": changes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make capacity", description=__doc__.split("\n")[0])
    for name, default in asdict(Inputs()).items():
        if isinstance(default, bool):
            parser.add_argument(f"--{name.replace('_', '-')}", action=argparse.BooleanOptionalAction, default=default)
        else:
            parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON only")
    args = vars(parser.parse_args(argv))
    as_json = args.pop("json")
    result = plan(Inputs(**args))
    if as_json:
        print(json.dumps(result, indent=2))
        return 0
    _print(result)
    return 0


def _print(result: dict[str, object]) -> None:
    inputs = result["inputs"]
    workers = result["worker_concurrency"]
    burst = f"burst {inputs['burst_rps']:,.0f}/s for {inputs['burst_seconds']} s"
    print(f"load: {inputs['steady_rps']:,.0f} enqueues/s, {burst} (p99 below: over the 8 minutes around it)")
    print(f"worker batch: {workers['batch_ms']} ms for {inputs['batch_size']} jobs")
    print(f"worker concurrency needed: steady {workers['steady']}, burst {workers['burst']} batches")
    print(f"API concurrency at the burst: {result['api_concurrency_at_burst']}")
    print(f"SQS in flight at the burst: {result['sqs_in_flight_at_burst']:,} (limit {SQS_IN_FLIGHT_LIMIT:,})")
    for name in ("esm_standard", "esm_provisioned_3x", "esm_provisioned_prewarmed"):
        t = result[name]
        print(
            f"{name:28} peak backlog {t['peak_backlog']:>9,}  for {t['backlog_seconds']:>3} s"
            f"  peak batches {t['peak_concurrency']:>5}  enqueue-to-run p99 ~{t['p99_wait_ms']:,.0f} ms"
        )
    print(
        f"faults (provisioned, prewarmed): a worker environment dies, then a {inputs['blip_seconds']} s store blip "
        f"2 s later; its batch returns after {inputs['killed_batch_returns_s']:g} s"
    )
    for name, t in result["faults_on_provisioned_prewarmed"].items():
        print(
            f"  {name:42} peak backlog {t['peak_backlog']:>9,}  enqueue-to-run p99 ~{t['p99_wait_ms']:,.0f} ms"
            f"  max ~{t['max_wait_ms']:,.0f} ms"
        )
    costs = result["cost_per_million_jobs_usd"]
    print("cost per million jobs (USD): " + ", ".join(f"{k} {v}" for k, v in costs.items()))
    print("where the design must change:")
    for change in result["design_changes"]:
        print(f"  - {change}")


if __name__ == "__main__":
    sys.exit(main())
