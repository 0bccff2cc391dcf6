"""`make drain`: how fast the worker fleet empties a backlog on this machine, and whose CPU it takes.

    make drain                          # backlogs of 60 and 1,000 echo jobs, 3 rounds each
    make drain ARGS="--jobs 200 --rounds 5"

Starts its own embedded stack on --port (ministack + cdk deploy, like `make up`). Per round: the
worker's event source is disabled, the backlog is enqueued in bulk, the CPU time of each process
group is read from /proc, the event source is enabled, and the round ends when the queue is empty.
Prints per round the jobs run per second, when the jobs started (ms after the first start: p50,
p90, last), and the CPU milliseconds per job of the emulator, the status cache, the fault proxy and
the worker and API environments; writes .corral/drain.json. A backlog of 60 is a cron second at
R = 5 (the full benchmark's 10 s of crons, 50 at least); 1,000 is the fleet's throughput ceiling.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from typing import Any

import requests

from bench.lib import measure, slo
from local.ministack import STATE, Ministack, worker_pids
from local.platform import Platform, embedded_stack
from local.prewarm import jobs_queue_mapping
from local.sidecars import Sidecars
from shared import settings

RESULT = STATE / "drain.json"


@dataclass(frozen=True)
class Round:
    jobs: int
    seconds: float
    jobs_per_second: float
    started_after_first_ms: dict[str, float | None]  # p50, p90, last
    cpu_ms_per_job: dict[str, float]
    cores_busy: float


def _cpu_by_group(emulator: Ministack, sidecars: Sidecars) -> dict[str, float]:
    assert emulator.process is not None
    groups = {"emulator": [emulator.process.pid]}
    for process in sidecars.processes:
        name = "status cache" if "local.dax_standin" in process.args else "fault proxy"
        groups[name] = [process.pid]
    groups["worker environments"] = worker_pids(emulator.endpoint, settings.WORKER_FUNCTION)
    groups["API environments"] = worker_pids(emulator.endpoint, settings.API_FUNCTION)
    return {name: sum(measure.cpu_seconds(pid) for pid in pids) for name, pids in groups.items()}


def drain_round(platform: Platform, emulator: Ministack, sidecars: Sidecars, jobs: int, timeout: float = 120) -> Round:
    lambda_, sqs = platform.aws("lambda"), platform.aws("sqs")
    queue_url = sqs.get_queue_url(QueueName=settings.QUEUE_NAME)["QueueUrl"]
    mapping = jobs_queue_mapping(lambda_)
    lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    time.sleep(3)  # the mapping's pollers stop
    ids: list[str] = []
    headers = {"Authorization": f"Bearer {platform.api_key}"}
    for first in range(0, jobs, settings.MAX_BATCH_JOBS):
        batch = [
            {"type": "echo", "payload": {"n": n}} for n in range(first, min(jobs, first + settings.MAX_BATCH_JOBS))
        ]
        response = requests.post(f"{platform.api_url}/v1/jobs:batch", json={"jobs": batch}, headers=headers, timeout=30)
        response.raise_for_status()
        ids += [result["id"] for result in response.json()["results"] if "id" in result]

    def depth() -> int:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
        return sum(int(attributes[name]) for name in names)

    before = _cpu_by_group(emulator, sidecars)
    began = time.monotonic()
    lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=True)
    while depth() > 0 and time.monotonic() - began < timeout:
        time.sleep(0.2)
    seconds = time.monotonic() - began
    time.sleep(0.5)  # the last batches' outcome writes and logs
    after = _cpu_by_group(emulator, sidecars)
    starts = sorted(_started_at(platform, ids))
    after_first = [(start - starts[0]) * 1000 for start in starts] if starts else []
    used = {name: after[name] - before.get(name, 0.0) for name in after}
    return Round(
        jobs=len(ids),
        seconds=round(seconds, 2),
        jobs_per_second=round(len(ids) / seconds, 1),
        started_after_first_ms={
            "p50": _ms(slo.percentile(after_first, 50)),
            "p90": _ms(slo.percentile(after_first, 90)),
            "last": _ms(max(after_first, default=None)),
        },
        cpu_ms_per_job={name: round(value * 1000 / max(1, len(ids)), 2) for name, value in used.items()},
        cores_busy=round(sum(used.values()) / seconds, 2),
    )


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value)


def _started_at(platform: Platform, ids: list[str]) -> list[float]:
    dynamodb = platform.aws("dynamodb")
    starts: list[float] = []
    for first in range(0, len(ids), 100):
        keys = [{"pk": {"S": f"job#{job_id}"}} for job_id in ids[first : first + 100]]
        request: dict[str, Any] = {settings.TABLE_NAME: {"Keys": keys, "ProjectionExpression": "started_at"}}
        while request:
            answer = dynamodb.batch_get_item(RequestItems=request)
            starts += [float(item["started_at"]["N"]) for item in answer["Responses"].get(settings.TABLE_NAME, [])]
            request = answer.get("UnprocessedKeys") or {}
    return starts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make drain", description=__doc__)
    parser.add_argument("--jobs", type=int, nargs="+", default=[60, 1000], help="backlog sizes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=4626)
    args = parser.parse_args(argv)
    rounds: list[Round] = []
    with embedded_stack(args.port, STATE / "drain") as stack:
        assert stack.sidecars is not None  # started: their CPU is counted too
        platform, emulator, sidecars = stack.platform, stack.emulator, stack.sidecars
        drain_round(platform, emulator, sidecars, 200)  # every worker environment has served a batch
        for jobs in args.jobs:
            for _ in range(args.rounds):
                done = drain_round(platform, emulator, sidecars, jobs)
                rounds.append(done)
                cpu = ", ".join(f"{name} {ms:g}" for name, ms in done.cpu_ms_per_job.items())
                print(
                    f"{done.jobs} jobs in {done.seconds:.2f} s = {done.jobs_per_second:g}/s; started after the first "
                    f"(ms) {done.started_after_first_ms}; CPU ms/job: {cpu}; {done.cores_busy:g} cores busy",
                    flush=True,
                )
    RESULT.write_text(json.dumps([asdict(r) for r in rounds], indent=2) + "\n")
    print(f"written: {RESULT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
