"""`make first-jobs`: a newcomer's first jobs, right after the stack comes up.

    make first-jobs                       # pre-warmed, as `make up` does
    make first-jobs ARGS=--compare        # also without pre-warming (the stack as it was), one after the other

Starts its own embedded stack on --port (ministack + cdk deploy, like `make up`), then at once
enqueues --jobs echo jobs at --rate per second and waits (bounded) until they have run. Prints
the enqueue-to-start (started_at - enqueued_at) of the first job, p50, p90 and the slowest, and
enqueues that failed; writes .corral/first-jobs.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from bench.lib import measure, slo
from bench.lib.load import EnqueueLoad
from local.ministack import STATE
from local.platform import embedded_stack

RESULT = STATE / "first-jobs.json"


@dataclass(frozen=True)
class FirstJobs:
    prewarmed: bool
    warm_environments: dict[str, int]
    deploy_seconds: float
    jobs: int
    failed_enqueues: int
    ran: int
    first_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    max_ms: float | None


def run(port: int, jobs: int, rate: float, prewarmed: bool, timeout: float = 180) -> FirstJobs:
    with embedded_stack(port, STATE / "first-jobs", warm=prewarmed) as stack:
        endpoint, platform = stack.endpoint, stack.platform
        load = EnqueueLoad(
            endpoint.api_url, endpoint.api_key, lambda at: ("first", rate) if at < jobs / rate else None, threads=jobs
        )  # a client per job: a slow first answer delays no other job's enqueue
        load.start()
        load.join()
        ids = [sample.job_id for sample in load.samples if sample.job_id]
        rows = _wait_until_run(platform.aws("dynamodb"), ids, timeout)
        first = min(load.samples, key=lambda sample: sample.at).job_id
        waits = slo.enqueue_to_run_ms(ids, rows)
        first_wait = slo.enqueue_to_run_ms([first], rows) if first else []
    return FirstJobs(
        prewarmed=prewarmed,
        warm_environments={warmed.function: warmed.running for warmed in endpoint.warmed},
        deploy_seconds=round(stack.deploy_seconds, 1),
        jobs=len(load.samples),
        failed_enqueues=sum(1 for sample in load.samples if sample.status != 202),
        ran=len(waits),
        first_ms=_round(first_wait[0] if first_wait else None),
        p50_ms=_round(slo.percentile(waits, 50)),
        p90_ms=_round(slo.percentile(waits, 90)),
        max_ms=_round(max(waits, default=None)),
    )


def _wait_until_run(dynamodb: Any, ids: list[str], timeout: float) -> dict[str, measure.JobRow]:
    deadline = time.monotonic() + timeout
    while True:
        rows = measure.job_rows(dynamodb)
        if all(rows.get(job_id) and rows[job_id].started_at for job_id in ids) or time.monotonic() > deadline:
            return rows
        time.sleep(1)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make first-jobs", description=__doc__)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--rate", type=float, default=4.0, help="enqueues per second")
    parser.add_argument("--port", type=int, default=4617, help="port of its own emulator")
    parser.add_argument("--compare", action="store_true", help="also run a stack that is not pre-warmed, first")
    args = parser.parse_args(argv)
    results = [run(args.port, args.jobs, args.rate, prewarmed=False)] if args.compare else []
    results.append(run(args.port, args.jobs, args.rate, prewarmed=True))
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps([asdict(result) for result in results], indent=2) + "\n")
    for result in results:
        label = "pre-warmed" if result.prewarmed else "not pre-warmed"
        print(
            f"{label:>15}: {result.jobs} jobs at {args.rate:g}/s, {result.failed_enqueues} enqueues failed, "
            f"{result.ran} ran; enqueue-to-start first {result.first_ms} ms, p50 {result.p50_ms} ms, "
            f"p90 {result.p90_ms} ms, max {result.max_ms} ms (environments warm: {result.warm_environments})"
        )
    print(f"(also in {RESULT})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
