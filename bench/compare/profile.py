"""Where corral's CPU per job goes: its worker and API handlers profiled in-process, every thread.

    python -m bench.compare.profile [--jobs 400] [--port 4597]

yappi is the profiler (pinned in requirements.txt): it measures the CPU of every thread (cProfile sees only
the thread that enables it, and a worker's job runs on three: the invocation's, its delivery's, the job's,
with outcome writes on a fourth). Starts an embedded stack on --port (sidecars, corral deployed as `make
up` deploys it), pauses the worker's event source, enqueues --jobs echo jobs through the API, and
runs a child process with the deployed worker's environment (its endpoints: the status cache, the
fault proxy) that receives them from the queue and calls `functions.worker.handler.handler` on them
in batches of 1 and of 10 (the timeline's batches at R = 8 hold 1-3 jobs; a backlog's hold 10).
Then the same for the API handler on synthetic `POST /v1/jobs` events (bench/scenarios/cost.py's).
Prints, per job: the handler's CPU in this process, the CPU of each step of the path (STEPS: a step is
the cumulative CPU of the functions that make it up, whichever thread ran them), the store and queue
requests that reached the sidecars (the emulator's work), and the functions taking most of the CPU;
writes .corral/profile-*.txt. What the emulator does for those requests is not profiled here: their
count is its share.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pstats
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yappi

from bench.lib.tuning import set_limits
from local.deploy import DEMO_TENANT
from local.ministack import STATE
from local.platform import embedded_stack
from local.prewarm import jobs_queue_mapping
from shared import settings

ROOT = Path(__file__).resolve().parents[2]
TOP = 30  # functions printed, by their own time


def _sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """What the SQS event source hands the worker for these received messages."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }


def _worker_child(batch: int, jobs: int) -> None:
    """In the worker's environment: receive `jobs` messages and handle them `batch` at a time, profiled."""
    import boto3

    from functions.worker import handler as worker
    from local.events import FakeLambdaContext
    from shared import environment

    class WorkerContext(FakeLambdaContext):
        function_name = settings.WORKER_FUNCTION
        log_stream_name = "profile"

        def get_remaining_time_in_millis(self) -> int:
            return 10_000

    sqs = boto3.client("sqs")
    url = environment.current().queue_url
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    worker.worker.prepare()
    _start_profile()
    yappi.stop()
    handled, cpu, wall = 0, 0.0, 0.0
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # the log lines
        while handled < jobs:
            got = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=batch, AttributeNames=["All"], WaitTimeSeconds=1
            ).get("Messages", [])
            if not got:
                break
            event = _sqs_event(got, arn)
            started, began = time.process_time(), time.perf_counter()
            yappi.start(profile_threads=True)
            worker.handler(event, WorkerContext())
            yappi.stop()
            cpu += time.process_time() - started
            wall += time.perf_counter() - began
            sqs.delete_message_batch(
                QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
            )
            handled += len(got)
    print(json.dumps({"jobs": handled, "cpu_seconds": cpu, "wall_seconds": wall, "stats": _dump()}))


def _api_child(api_key: str, jobs: int) -> None:
    from functions.api.handler import handler
    from local.events import FakeLambdaContext, http_api_event

    event = http_api_event("POST", "/v1/jobs", {"type": "echo", "payload": {"n": 1}}, api_key)
    context = FakeLambdaContext()
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(20):  # the key cache, the id secret, the connection
            handler(event, context)
        started = time.process_time()
        _start_profile()
        began = time.perf_counter()
        for _ in range(jobs):
            handler(event, context)
        yappi.stop()
        cpu, wall = time.process_time() - started, time.perf_counter() - began
    print(json.dumps({"jobs": jobs, "cpu_seconds": cpu, "wall_seconds": wall, "stats": _dump()}))


def _start_profile() -> None:
    yappi.set_clock_type("cpu")  # each thread's CPU, not its waits
    yappi.start(profile_threads=True)


def _dump() -> str:
    """Every thread's functions, merged, in pstats' format."""
    path = Path(os.environ.get("PROFILE_DUMP", "/tmp/corral-profile.prof"))
    yappi.get_func_stats().save(str(path), type="pstat")
    return str(path)


# The steps of a plain job's path, each the cumulative CPU of the functions that make it up (file suffix,
# function name), on whichever thread they ran. A function inside another step's is not listed twice.
STEPS: dict[str, list[tuple[str, str]]] = {
    "worker: event to deliveries (records read, job ids verified)": [
        ("functions/worker/handler.py", "_delivery"),
        ("shared/worker/producer.py", "_batch_jobs"),
    ],
    "worker: running share (tenant's slots)": [
        ("shared/worker/admit/running_share.py", "__init__"),
        ("shared/worker/admit/running_share.py", "give_back"),
    ],
    "worker: claim (conditional write)": [("shared/store/jobs/job_claims.py", "claim")],
    "worker: the job's run (its thread, its context, its code)": [("shared/worker/run/executor.py", "run")],
    "worker: outcome write (conditional write)": [("shared/worker/complete/completer.py", "_write_completed")],
    "worker: cover (visibility change)": [("shared/worker/run/cover.py", "begin")],
    "worker: hand-off to the delivery's thread": [("concurrent/futures/thread.py", "submit")],
    "worker: partial-batch answer (Powertools batch processor)": [
        ("aws_lambda_powertools/utilities/batch/decorators.py", "process_partial_response")
    ],
    "worker: the batch log line": [("aws_lambda_powertools/logging/logger.py", "info")],
    "worker: metrics flush (EMF line)": [
        ("aws_lambda_powertools/metrics/provider/cloudwatch_emf/cloudwatch.py", "flush_metrics")
    ],
    "API: the handler, whole": [("functions/api/handler.py", "handler")],
    "API: send (SendMessage, botocore's client side)": [("shared/aws/queue.py", "send")],
    "any: botocore's client side of every AWS request": [("botocore/client.py", "_make_api_call")],
}


def step_table(stats: pstats.Stats, jobs: int) -> list[tuple[str, float]]:
    """(step, CPU ms per job) for each step of STEPS found in `stats`."""
    found = []
    entries = stats.stats  # type: ignore[attr-defined]
    for step, functions in STEPS.items():
        seconds = sum(
            entry[3]
            for (file, _, name), entry in entries.items()
            if any(file.endswith(suffix) and name == function for suffix, function in functions)
        )
        if seconds:
            found.append((step, round(seconds * 1000 / max(1, jobs), 3)))
    return found


def _child(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    # The deployed code asset and the job packages' layers first on the path, as in a function.
    build = ROOT / ".corral" / "build"
    path = [build / "code", *sorted(build.glob("jobs-layers/*/python")), ROOT]
    env = {**env, "PYTHONPATH": os.pathsep.join(str(folder) for folder in path)}
    out = subprocess.run(
        [sys.executable, "-m", "bench.compare.profile", *command], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise RuntimeError(f"the profile child failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _calls(chaos: Any) -> Counter[str]:
    return Counter({k: v for k, v in chaos.stats()["proxy"].items() if not k.endswith(".injected")})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--port", type=int, default=4597)
    args = parser.parse_args(argv)

    with embedded_stack(args.port, STATE / "profile", sqs_through_proxy=False, announce=True) as stack:
        platform, chaos = stack.platform, stack.chaos
        assert chaos is not None
        set_limits(platform, DEMO_TENANT, rate=1_000_000.0, burst=1_000_000, max_running=0)  # as the benchmarks
        lambda_ = platform.aws("lambda")
        mapping = jobs_queue_mapping(lambda_)
        lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
        time.sleep(3)
        config = lambda_.get_function_configuration(FunctionName=settings.WORKER_FUNCTION)
        env = {**os.environ, **stack.aws_env, **config["Environment"]["Variables"]}
        env["POWERTOOLS_METRICS_NAMESPACE"] = env.get("POWERTOOLS_METRICS_NAMESPACE", "corral")
        client = platform.client()
        reports = []
        for batch in (1, 10):
            for n in range(args.jobs):
                client.enqueue("echo", {"n": n})
            before = _calls(chaos)
            got = _child(["worker", str(batch), str(args.jobs)], {**env, "PROFILE_DUMP": f"/tmp/worker-{batch}.prof"})
            used = _calls(chaos) - before
            reports.append((f"worker, batches of {batch}", pstats.Stats(got["stats"]), got, dict(used)))
        api_env = {**env, "POWERTOOLS_SERVICE_NAME": "corral-api"}
        before = _calls(chaos)
        got = _child(["api", platform.api_key, str(args.jobs)], {**api_env, "PROFILE_DUMP": "/tmp/api.prof"})
        reports.append(("API, POST /v1/jobs", pstats.Stats(got["stats"]), got, dict(_calls(chaos) - before)))
    for name, stats, got, calls in reports:
        out = io.StringIO()
        stats.stream = out  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(TOP)
        stats.sort_stats("cumulative").print_stats(TOP)
        per_job = {op: round(n / got["jobs"], 2) for op, n in sorted(calls.items())}
        steps = "\n".join(f"  {ms:8.3f}  {step}" for step, ms in step_table(stats, got["jobs"]))
        text = (
            f"{name}: {got['jobs']} jobs, {got['cpu_seconds'] * 1000 / max(1, got['jobs']):.2f} CPU ms per job "
            f"in the handler's process, {got['wall_seconds'] * 1000 / max(1, got['jobs']):.2f} ms of the handler's "
            f"time (the profiler's overhead included)\nstore and queue requests per job (at the sidecars): "
            f"{per_job}\nCPU ms per job by step (the profiler's overhead included):\n{steps}\n"
        )
        print(text, flush=True)
        path = STATE / f"profile-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}.txt"
        path.write_text(text + out.getvalue())
        print(f"  (functions: {path})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        _worker_child(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1:2] == ["api"]:
        _api_child(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(main())
