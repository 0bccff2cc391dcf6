"""Where corral's CPU per job goes: its worker and API handlers profiled in-process, every thread.

    python -m bench.compare.profile [--jobs 400] [--port 4597]

cProfile (the standard library's) is the profiler, one per thread, each on its thread's CPU clock
(`time.thread_time`): a worker's job runs on three threads (the invocation's, its delivery's, the job's,
with outcome writes on a fourth), a profile enabled on one sees only that one, and waits cost nothing.

Starts an embedded stack on --port (sidecars, corral deployed as `make up` deploys it), pauses the
worker's event source, enqueues --jobs echo jobs through the API, and runs a child process with the
deployed worker's environment (its endpoints: the status cache, the fault proxy) that receives them
from the queue and calls `functions.worker.handler.handler` on them in batches of 1 and of 10 (the
timeline's batches at R = 8 hold 1-3 jobs; a backlog's hold 10): once without the profiler (the CPU
per job), once with it (each step's share). Then the same for the API handler on synthetic `POST
/v1/jobs` events (bench/scenarios/cost.py's). Prints, per job: the handler's CPU in this process, each
step of the path (STEPS: a step is the cumulative CPU of the functions that make it up, whichever
thread ran them), the store and queue requests that reached the sidecars (the emulator's work), and
the functions taking most of the CPU; writes .corral/profile-*.txt. What the emulator does for those
requests is not profiled here: their count is its share.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

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


def _worker_child(batch: int, jobs: int, profiled: bool) -> None:
    """In the worker's environment: receive `jobs` messages and handle them `batch` at a time; `profiled`: with
    a profile on each thread (its CPU figure then includes the profiler's cost)."""
    import boto3

    profiles, timers = ThreadProfiles(), StepTimers()
    if profiled:
        profiles.install()  # before the worker's pools start their threads
    from functions.worker import handler as worker

    if not profiled:
        timers.install()
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
    handled, cpu, wall = 0, 0.0, 0.0
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # the log lines
        while handled < jobs:
            got = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=batch, AttributeNames=["All"], WaitTimeSeconds=1
            ).get("Messages", [])
            if not got:
                break
            event = _sqs_event(got, arn)
            started, began, on_this_thread = time.process_time(), time.perf_counter(), time.thread_time()
            profiles.start()
            timers.active = True
            timers.begin_invocation()
            worker.handler(event, WorkerContext())
            timers.end_invocation()
            timers.add(WHOLE["worker"], time.thread_time() - on_this_thread)
            timers.active = False
            profiles.stop()
            cpu += time.process_time() - started
            wall += time.perf_counter() - began
            sqs.delete_message_batch(
                QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
            )
            handled += len(got)
    stats = profiles.dump() if profiled else None
    print(
        json.dumps(
            {
                "jobs": handled,
                "cpu_seconds": cpu,
                "wall_seconds": wall,
                "stats": stats,
                "steps": timers.seconds,
                "to_first": {step: sorted(seconds) for step, seconds in timers.to_first.items()},
            }
        )
    )


def _api_child(api_key: str, jobs: int, profiled: bool) -> None:
    profiles, timers = ThreadProfiles(), StepTimers()
    if profiled:
        profiles.install()
    from functions.api.handler import handler
    from local.events import FakeLambdaContext, http_api_event

    if not profiled:
        timers.install()

    event = http_api_event("POST", "/v1/jobs", {"type": "echo", "payload": {"n": 1}}, api_key)
    context = FakeLambdaContext()
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(20):  # the key cache, the id secret, the connection
            handler(event, context)
        timers.active = True
        started, on_this_thread = time.process_time(), time.thread_time()
        profiles.start()
        began = time.perf_counter()
        for _ in range(jobs):
            handler(event, context)
        profiles.stop()
        cpu, wall = time.process_time() - started, time.perf_counter() - began
        timers.add(WHOLE["api"], time.thread_time() - on_this_thread)
    stats = profiles.dump() if profiled else None
    print(json.dumps({"jobs": jobs, "cpu_seconds": cpu, "wall_seconds": wall, "stats": stats, "steps": timers.seconds}))


class ThreadProfiles:
    """A cProfile per thread, on the thread's own CPU clock: the calling thread's, and every thread started
    after `install` (the worker's pools start theirs on first use, and profile from then on)."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []

    def _profile(self) -> cProfile.Profile:
        profile = cProfile.Profile(time.thread_time)
        self.profiles.append(profile)
        return profile

    def install(self) -> None:
        original = threading.Thread.run
        profiles = self

        def profiled_run(thread: threading.Thread) -> None:
            profile = profiles._profile()
            profile.enable()
            try:
                original(thread)
            finally:
                profile.disable()

        threading.Thread.run = profiled_run  # type: ignore[method-assign]
        self.main = self._profile()

    def start(self) -> None:
        if self.profiles:
            self.main.enable()

    def stop(self) -> None:
        if self.profiles:
            self.main.disable()

    def dump(self) -> str:
        """Every thread's functions, merged, in pstats' format. Pool threads still run: their profiles are
        read as they stand (their threads idle, between batches)."""
        path = Path(os.environ.get("PROFILE_DUMP", "/tmp/corral-profile.prof"))
        merged = pstats.Stats(self.main)
        for profile in self.profiles:
            if profile is not self.main:
                merged.add(profile)  # pstats reads a profile's entries as they stand (create_stats)
        merged.dump_stats(path)
        return str(path)


# The steps of a plain job's path, each timed on its own thread's CPU clock around the function that is
# the step (module, qualified name), whichever thread runs it: a step inside another is counted in both
# (the table says "of which"). The timers cost ~1 µs a call, so the steps are measured without the
# profiler, in the same run as the CPU per job.
STEPS: dict[str, tuple[str, str]] = {
    "worker: the invocation, whole (its thread: the handler and its decorators)": ("", ""),
    "worker: a delivery handled (receive: admit, claim, run, settle)": ("shared.worker.receive", "handle"),
    "worker:   of which the claim (a conditional UpdateItem)": ("shared.store.jobs.job_claims", "claim"),
    "worker:   of which the job's run (its thread, its context, its code)": ("shared.worker.run.executor", "run"),
    "worker: the batch made (records read, ids verified, running share)": ("shared.worker.producer", "Worker.batch"),
    "worker: the outcome write (a conditional UpdateItem, on a writer thread)": (
        "shared.store.jobs.job_store",
        "complete",
    ),
    "worker: the cover (ChangeMessageVisibilityBatch, on a writer thread)": (
        "shared.worker.run.cover",
        "HiddenBatch.begin",
    ),
    "worker: the batch's end (claims unused, writes waited for, slots given back)": (
        "shared.worker.batch",
        "Batch.finish",
    ),
    "worker: the partial-batch answer (Powertools' batch processor)": (
        "functions.worker.handler",
        "process_partial_response",
    ),
    "worker: log lines (Powertools Logger.info)": ("aws_lambda_powertools.logging.logger", "Logger.info"),
    "worker: the metrics flush (the EMF line)": (
        "aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch",
        "AmazonCloudWatchEMFProvider.flush_metrics",
    ),
    "API: the handler, whole": ("", ""),
    "API:   of which the send (SendMessage)": ("shared.aws.queue", "send"),
    "any: botocore's client side of every AWS request": ("botocore.client", "BaseClient._make_api_call"),
}
MARKED = {  # step -> what the wall time to its first call in an invocation is called
    "worker:   of which the claim (a conditional UpdateItem)": "its first claim",
    "worker:   of which the job's run (its thread, its context, its code)": "its first job's run (the recorded start)",
}
WHOLE = {
    "worker": "worker: the invocation, whole (its thread: the handler and its decorators)",
    "api": "API: the handler, whole",
}


class StepTimers:
    """Thread-CPU seconds spent in each step of STEPS (`install` wraps each step's function where it is
    looked up)."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.active = False  # counting only inside the handler: not this tool's own receives and deletes
        # Wall time from an invocation's start to its first claim's call, and to its first job's run (what the
        # outcome records as the job's start, so enqueue-to-run ends there): what the worker adds before the run.
        self.invocation_began: float | None = None
        self.to_first: dict[str, list[float]] = {step: [] for step in MARKED}
        self._marked: set[str] = set()

    def begin_invocation(self) -> None:
        self.invocation_began = time.perf_counter()

    def end_invocation(self) -> None:
        self.invocation_began = None
        self._marked.clear()

    def add(self, step: str, seconds: float) -> None:
        if self.active:
            with self._lock:
                self.seconds[step] += seconds

    def install(self) -> None:
        import importlib

        for step, (module_name, qualified) in STEPS.items():
            if not module_name:
                continue
            owner: Any = importlib.import_module(module_name)
            *path, name = qualified.split(".")
            for part in path:
                owner = getattr(owner, part)
            setattr(owner, name, self._timed(step, getattr(owner, name)))

    def _timed(self, step: str, function: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if step in MARKED and self.active and self.invocation_began is not None:
                with self._lock:
                    if self.invocation_began is not None and step not in self._marked:
                        self._marked.add(step)
                        self.to_first[step].append(time.perf_counter() - self.invocation_began)
            began = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.add(step, time.thread_time() - began)

        return timed


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
            runs = []
            for profiled in (False, True):  # the CPU without the profiler, then the steps' shares under it
                for n in range(args.jobs):
                    client.enqueue("echo", {"n": n})
                before = _calls(chaos)
                dump = {"PROFILE_DUMP": f"/tmp/worker-{batch}.prof"}
                runs.append(_child(["worker", str(batch), str(args.jobs), str(int(profiled))], {**env, **dump}))
                used = _calls(chaos) - before
            reports.append((f"worker, batches of {batch}", *runs, dict(used)))
        api_env = {**env, "POWERTOOLS_SERVICE_NAME": "corral-api", "PROFILE_DUMP": "/tmp/api.prof"}
        before = _calls(chaos)
        runs = [_child(["api", platform.api_key, str(args.jobs), str(int(profiled))], api_env) for profiled in (0, 1)]
        reports.append(("API, POST /v1/jobs", *runs, {k: v / 2 for k, v in (_calls(chaos) - before).items()}))
    for name, plain, profiled_run, calls in reports:
        out = io.StringIO()
        if profiled_run["stats"]:
            stats = pstats.Stats(profiled_run["stats"])
            stats.stream = out  # type: ignore[attr-defined]
            stats.sort_stats("tottime").print_stats(TOP)
            stats.sort_stats("cumulative").print_stats(TOP)
        jobs = max(1, plain["jobs"])
        cpu_ms = plain["cpu_seconds"] * 1000 / jobs
        per_job = {op: round(n / max(1, profiled_run["jobs"]), 2) for op, n in sorted(calls.items())}
        steps = "\n".join(
            f"  {seconds * 1000 / jobs:7.3f} ms  {seconds * 1000 / jobs / cpu_ms:6.1%}  {step}"
            for step in STEPS
            if (seconds := plain["steps"].get(step))
        )
        before_claim = "".join(
            f"wall ms from the invocation's start to {MARKED[step]}: p50 {seconds[len(seconds) // 2] * 1000:.2f}, "
            f"p90 {seconds[int(len(seconds) * 0.9)] * 1000:.2f}\n"
            for step, seconds in (plain.get("to_first") or {}).items()
            if seconds
        )
        text = (
            f"{name}: {plain['jobs']} jobs, {cpu_ms:.2f} CPU ms per job in the handler's process, "
            f"{plain['wall_seconds'] * 1000 / jobs:.2f} ms of the handler's time (no profiler); "
            f"{profiled_run['cpu_seconds'] * 1000 / max(1, profiled_run['jobs']):.2f} CPU ms per job profiled\n"
            f"store and queue requests per job (at the sidecars): {per_job}\n"
            f"{before_claim}"
            f"CPU ms per job by step (thread CPU, timed without the profiler), and its share of the process's:\n"
            f"{steps}\n"
        )
        print(text, flush=True)
        path = STATE / f"profile-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}.txt"
        path.write_text(text + out.getvalue())
        print(f"  (functions: {path})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        _worker_child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
    elif sys.argv[1:2] == ["api"]:
        _api_child(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")
    else:
        sys.exit(main())
