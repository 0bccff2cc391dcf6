"""Eight corrections to ministack 1.5.33 (Lambda runtime, SQS event source mapping and receive, Scheduler) toward
AWS, at launch.

local/ministack.py starts the emulator as `<ministack venv>/bin/python -P local/ministack_patch.py`
instead of its `ministack` script: this module patches the running emulator, then calls
`ministack.app.main()`. The installed package is never edited, and nothing leaks into Lambda
subprocesses (they inherit the environment and the interpreter, not this process's imports).
It runs in the emulator's own venv, so it imports only the standard library and ministack.

1. A handler error from a live process keeps the execution environment. ministack SIGTERMs the
   process on every `status: "error"`, including a handler's own exception; AWS recycles an
   environment only when the runtime itself fails (the process exits, a timeout, an init error).
2. A lease prefers a live idle environment, and a dead one never holds a batch. ministack leases
   the first idle entry without checking that its process is alive, so after a kill the next
   batch respawns the dead one on its own path (rmtree of ~60 MB, unzip, import) while live idle
   environments wait. Here dead entries are dropped (their process and files reaped in the
   background); when a live one serves the lease, each dropped one is re-warmed off the batch
   path, one at a time; when none does, the caller cold-starts a new one, as AWS would.
3. Init is bounded. On AWS the init phase gets 10 s; if it does not finish, Lambda retries it
   within the first invocation, bounded by the function's timeout (Lambda developer guide,
   "Lambda execution environment", Init phase). ministack waits for the init reply forever.
   Here the init (from process start to its "ready" line) gets 10 s + the function's timeout
   (CORRAL_MINISTACK_INIT_TIMEOUT overrides), then the invocation fails with an init error and
   only that environment is discarded (ministack invalidates the function's whole pool when a
   spawn raises).

4. A whole-batch failure lowers the mapping's concurrency instead of pausing it. ministack stops
   dispatching the whole mapping for 1 s after any failed batch (`_ESM_BACKOFF_SECONDS`); AWS
   "gradually backs off, reducing the amount of concurrency allocated" to the mapping (Lambda
   developer guide, SQS error handling). Here each failed batch takes one concurrent batch off
   the mapping for that same second, never below one.

5. EventBridge Scheduler fires a schedule at its due second (apply_scheduler_on_the_second), not
   up to 10 s late in one burst.
6. A request that finds every warm environment of its function busy waits up to 1 s for one to be
   released before cold-starting another (apply_wait_for_a_warm_environment).
7. A standard queue with message groups receives fairly. ministack stores a standard queue's
   MessageGroupId but receives strictly oldest first, so one tenant's backlog delays every other
   tenant's jobs. AWS fair queues (SQS developer guide, "How Amazon SQS fair queues work") deliver
   a quiet group's messages ahead of a group holding a disproportionate share of the in-flight
   messages, and count each message without a group as a tenant of its own. Here each receive
   takes, message by message, the oldest waiting message of the group with the fewest in flight
   (ties: the group whose oldest message is oldest). Stronger than AWS, which reorders only once
   a group is detected noisy (over ~10 % of in-flight and ~30 of its own in flight): the emulator's
   few concurrent batches would rarely reach those thresholds. FIFO queues are untouched.
8. A cold start unpacks nothing another environment already unpacked: each code or layer zip is
   extracted once, shared read-only (apply_shared_code_extraction).

Evidence and figures: docs/decisions/emulator-corrections.md. Any other ministack version
is refused: these replace private internals, checked by version and by the hash of each replaced
function's source.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import queue
import sys
import threading
import time
from importlib.metadata import version
from typing import Any

SUPPORTED_VERSION = "1.5.33"
INIT_TIMEOUT_ENV = "CORRAL_MINISTACK_INIT_TIMEOUT"
AWS_INIT_LIMIT_SECONDS = 10.0
REFUSED_EXIT_CODE = 3
MARKER_ENV = "CORRAL_MINISTACK_PATCHED"  # set in the emulator's environment, so its Lambdas can tell (tests)

# sha256 of inspect.getsource() of what is replaced or wrapped, as shipped in ministack 1.5.33.
EXPECTED_SOURCES = {
    "Worker.invoke": "96751a75471021ecc05362bd28031305be50ff352345c5f7b1f9b7924a467b31",
    "Worker._spawn": "c55febf956565c5e83b8a36e069852483461164e899afa9c735a17e138ad1c93",
    "acquire_worker": "5017d144adb5b983050914401f482f2ad1332f4564c96903c20ab7e4defad7da",
    "_run_sqs_batch": "f9bf630aabf3d1b9dba295fc9929df7230c454d5e530da6fed883be0097500cd",
    "_sqs_esm_concurrency": "d3e9d1e865aa0b28e7873a2ec3d794ce0383435741658f6fdec000b1b0d9b224",
    "sqs._collect_msgs": "308a6eb1b3d4c8ad5e5e63b0abb0e8ae9556d70f8c8126bfa221b0b3dbf6360a",
}


class UnsupportedMinistack(RuntimeError):
    pass


def _source_hash(function: Any) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()


def _installed_version() -> str:
    """The installed ministack's version; UnsupportedMinistack unless it is the one corrected here."""
    installed = version("ministack")
    if installed != SUPPORTED_VERSION:
        raise UnsupportedMinistack(
            f"local/ministack_patch.py corrects ministack {SUPPORTED_VERSION}, but {installed} is installed: "
            "re-read its core/lambda_runtime.py, port the corrections, and update SUPPORTED_VERSION and "
            "EXPECTED_SOURCES (or pin ministack back in local/requirements-ministack.txt)"
        )
    return installed


def _refuse_changed(installed: str, found: dict[str, str], expected: dict[str, str]) -> None:
    changed = sorted(name for name, digest in found.items() if digest != expected[name])
    if changed:
        raise UnsupportedMinistack(f"ministack {installed}'s {', '.join(changed)} differ from what was patched")


def check_supported() -> None:
    """Refuse anything but the exact ministack these corrections were written against."""
    installed = _installed_version()
    from ministack.core import lambda_runtime as runtime
    from ministack.services import lambda_svc, sqs

    found = {
        "sqs._collect_msgs": _source_hash(sqs._collect_msgs),
        "Worker.invoke": _source_hash(runtime.Worker.invoke),
        "Worker._spawn": _source_hash(runtime.Worker._spawn),
        "acquire_worker": _source_hash(runtime.acquire_worker),
        "_run_sqs_batch": _source_hash(lambda_svc._run_sqs_batch),
        "_sqs_esm_concurrency": _source_hash(lambda_svc._sqs_esm_concurrency),
    }
    _refuse_changed(installed, found, EXPECTED_SOURCES)


def init_timeout(config: dict) -> float:
    """AWS's 10 s init phase plus its retry inside the first invocation, bounded by the function's timeout."""
    override = os.environ.get(INIT_TIMEOUT_ENV)
    return float(override) if override else AWS_INIT_LIMIT_SECONDS + float(config.get("Timeout", 3))


def _is_live(worker: Any) -> bool:
    return worker._proc is not None and worker._proc.poll() is None


def _is_dead(worker: Any) -> bool:
    """Started once and no longer running (killed, exited, failed its init)."""
    return getattr(worker, "_corral_dead", False) or (worker._proc is not None and worker._proc.poll() is not None)


def apply() -> None:
    """Patch the imported ministack in place (idempotent)."""
    from ministack.core import lambda_runtime as runtime
    from ministack.core.concurrency import spawn_background
    from ministack.services import lambda_svc

    if getattr(runtime, "_corral_patched", False):
        return
    check_supported()
    original_spawn = runtime.Worker._spawn
    rewarms: queue.SimpleQueue[Any] = queue.SimpleQueue()  # one re-warm at a time: no cold-start storm

    def bounded_spawn(self: Any) -> None:
        """The original spawn, with the init reply bounded at init_timeout() from the process's start."""
        previous, finished, timed_out = self._proc, threading.Event(), threading.Event()
        limit = init_timeout(self.config)

        def watchdog() -> None:
            while not finished.is_set():  # unpacking code and layers is not init: wait for the process
                process = self._proc
                if process is not None and process is not previous:
                    break
                finished.wait(0.05)
            else:
                return
            if not finished.wait(limit):
                timed_out.set()
                process.kill()

        threading.Thread(target=watchdog, daemon=True, name=f"corral-init-{self.func_name}").start()
        try:
            original_spawn(self)
        except Exception as error:
            if timed_out.is_set():
                raise RuntimeError(f"Init did not finish within {limit:g} s; the environment was discarded") from error
            raise
        finally:
            finished.set()

    def invoke(
        self: Any,
        event: Any,
        request_id: str,
        *,
        trace_id: str | None = None,
        depth: Any = None,
        durable: dict | None = None,
        invoked_function_arn: str | None = None,
    ) -> dict:
        """ministack 1.5.33's Worker.invoke; differences marked `corral:`."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                try:
                    self._spawn()
                except Exception as error:  # corral: fail this invocation and discard only this environment
                    self._corral_dead = True
                    process, self._proc = self._proc, None
                    runtime._signal(process)
                    runtime._collect(process, time.monotonic() + runtime._REAP_GRACE)
                    return {"status": "error", "error": str(error), "cold_start": True, "log": self._drain_stderr()}
                cold = True
                self._cold = False
            else:
                cold = False

            timeout = self.config.get("Timeout", 30)
            envelope = {
                "event": event,
                "ctx": {
                    "request_id": request_id,
                    "invoked_function_arn": invoked_function_arn
                    if invoked_function_arn is not None
                    else self.config.get("FunctionArn", ""),
                    "timeout_ms": int(float(timeout) * 1000),
                    "trace_id": trace_id,
                    "depth": depth,
                    "durable": durable or {},
                },
            }
            result_box: list = []
            runtime_failed = threading.Event()  # corral: the process failed, not the handler

            def _read_response() -> None:
                try:
                    self._proc.stdin.write(json.dumps(envelope) + "\n")
                    self._proc.stdin.flush()
                    for _ in range(200):
                        response_line = self._proc.stdout.readline()
                        if not response_line:
                            runtime_failed.set()
                            result_box.append({"status": "error", "error": "Worker process died"})
                            return
                        response_line = response_line.strip()
                        if not response_line:
                            continue
                        if response_line.startswith("{"):
                            try:
                                response = json.loads(response_line)
                                if response.get("status") in ("ok", "error"):
                                    result_box.append(response)
                                    return
                            except json.JSONDecodeError:
                                continue
                    runtime_failed.set()
                    result_box.append({"status": "error", "error": "No JSON response from worker after 200 lines"})
                except Exception as e:
                    runtime_failed.set()
                    result_box.append({"status": "error", "error": str(e)})

            reader = threading.Thread(target=_read_response, daemon=True)
            reader.start()
            reader.join(timeout=timeout)

            if reader.is_alive():
                runtime.logger.warning("Lambda %s timed out after %ds — killing worker", self.func_name, timeout)
                self._corral_dead = True
                proc, self._proc = self._proc, None
                runtime._signal(proc)
                runtime._collect(proc, time.monotonic() + runtime._REAP_GRACE)
                return {
                    "status": "error",
                    "error": f"Task timed out after {timeout}.00 seconds",
                    "cold_start": cold,
                    "log": self._drain_stderr(),
                }

            if not result_box:
                self._corral_dead = True
                self._proc = None
                return {"status": "error", "error": "Worker returned no response", "cold_start": cold}

            response = result_box[0]
            # corral: only a failed runtime ends the environment; a handler's exception does not (as on AWS).
            if response.get("status") == "error" and runtime_failed.is_set():
                self._corral_dead = True
                proc, self._proc = self._proc, None
                runtime._signal(proc)
                runtime._collect(proc, time.monotonic() + runtime._REAP_GRACE)
            response["cold_start"] = cold
            response["log"] = self._drain_stderr_bounded()
            return response

    def rewarm(worker: Any) -> None:
        try:
            runtime.ensure_spawned(worker)
        except Exception as error:
            runtime.logger.warning("re-warming %s failed: %s", worker.func_name, error)
            with runtime._lock:
                for entries in runtime._workers.values():
                    if worker in entries:
                        entries.remove(worker)
            runtime.kill_workers([worker])
            return
        runtime.release_worker(worker)

    def rewarm_forever() -> None:
        while True:
            rewarm(rewarms.get())

    def acquire_worker(
        func_name: str,
        config: dict,
        code_zip: bytes,
        qualifier: str = "$LATEST",
        max_concurrency: int | None = None,
    ) -> tuple[Any, str]:
        """ministack's lease, preferring a live idle environment and never handing out a dead one."""
        key = runtime._worker_key(func_name, config, qualifier)
        cap = max_concurrency or runtime._LOCAL_MAX_WORKERS
        replacements: list[Any] = []
        with runtime._lock:
            entries = runtime._workers.setdefault(key, [])
            dead = [w for w in entries if not w.in_use and _is_dead(w)]
            for worker in dead:
                entries.remove(worker)
            idle = [w for w in entries if not w.in_use]
            live = next((w for w in idle if _is_live(w)), None)
            chosen, reason = live or next(iter(idle), None), "reused"
            if chosen is None:
                if cap and len(entries) >= cap:
                    chosen, reason = None, "func_cap"
                else:
                    chosen, reason = runtime._worker_class_for(config)(func_name, config, code_zip), "spawn"
                    entries.append(chosen)
            if chosen is not None:
                chosen.in_use = True
                chosen.last_used = time.time()
            if live is not None:  # demand is met warm: bring back the lost capacity off the batch path
                for _ in dead:
                    if cap and len(entries) >= cap:
                        break
                    replacement = runtime._worker_class_for(config)(func_name, config, code_zip)
                    replacement.in_use = True
                    replacement.last_used = time.time()
                    entries.append(replacement)
                    replacements.append(replacement)
        if dead:
            spawn_background(runtime.kill_workers, dead, thread_name="corral-reap")
        for replacement in replacements:
            rewarms.put(replacement)
        return chosen, reason

    threading.Thread(target=rewarm_forever, daemon=True, name="corral-rewarm").start()
    original_run_sqs_batch = lambda_svc._run_sqs_batch
    original_concurrency = lambda_svc._sqs_esm_concurrency
    failed_batches: dict[str, list[float]] = {}  # mapping UUID -> when its recent batches failed whole
    failures_lock = threading.Lock()

    def recent_failures(esm_id: str) -> int:
        since = time.monotonic() - lambda_svc._ESM_BACKOFF_SECONDS
        with failures_lock:
            kept = [at for at in failed_batches.get(esm_id, []) if at > since]
            failed_batches[esm_id] = kept
            return len(kept)

    def run_sqs_batch(esm: dict, *args: Any) -> None:
        """ministack's batch run; a whole-batch failure lowers concurrency instead of pausing the mapping."""
        original_run_sqs_batch(esm, *args)
        esm_id = esm["UUID"]
        if esm.get("LastProcessingResult") == "FAILED" or lambda_svc._esm_backoff_until.get(esm_id, 0) > time.time():
            lambda_svc._esm_backoff_until.pop(esm_id, None)
            with failures_lock:
                failed_batches.setdefault(esm_id, []).append(time.monotonic())

    def sqs_esm_concurrency(esm: dict, func_rec: dict, config: dict, queue: dict | None = None) -> int:
        limit = original_concurrency(esm, func_rec, config, queue)
        return max(1, limit - recent_failures(esm["UUID"]))

    runtime.Worker._spawn = bounded_spawn
    lambda_svc._run_sqs_batch = run_sqs_batch
    lambda_svc._sqs_esm_concurrency = sqs_esm_concurrency
    runtime.Worker.invoke = invoke
    runtime.acquire_worker = acquire_worker
    lambda_svc.acquire_worker = acquire_worker  # imported by name there
    apply_fair_receive()
    runtime._corral_patched = True
    os.environ[MARKER_ENV] = SUPPORTED_VERSION


def fair_order(messages: list[dict], now: float, wanted: int) -> list[dict]:
    """Which visible messages of a standard queue one receive takes, fairest first (correction 7).

    Each pick is the oldest waiting message of the group with the fewest messages in flight,
    counting the picks; a message without a group is a group of its own.
    """
    in_flight: dict[Any, int] = {}
    for message in messages:
        group = message.get("group_id")
        if group and message["receive_count"] > 0 and message["visible_at"] > now:
            in_flight[group] = in_flight.get(group, 0) + 1
    waiting: dict[Any, list[dict]] = {}  # group -> its visible messages, oldest first; groups by oldest message
    for message in messages:
        if message["visible_at"] <= now:
            waiting.setdefault(message.get("group_id") or ("", message["id"]), []).append(message)
    picked: list[dict] = []
    taken: dict[Any, int] = {}
    while len(picked) < wanted and waiting:
        group = min(waiting, key=lambda g: in_flight.get(g, 0))  # min keeps the first of equals: oldest
        queue = waiting[group]
        picked.append(queue[taken.get(group, 0)])
        taken[group] = taken.get(group, 0) + 1
        in_flight[group] = in_flight.get(group, 0) + 1
        if taken[group] == len(queue):
            del waiting[group]
    return picked


def apply_fair_receive() -> None:
    """Correction 7: standard queues receive by fair_order(); FIFO queues as ministack does."""
    from ministack.services import sqs

    original_collect = sqs._collect_msgs

    def collect_msgs(q: dict, max_n: int, vis_timeout: int) -> list:
        if q["is_fifo"]:
            return original_collect(q, max_n, vis_timeout)
        now = time.time()
        for message in q["messages"]:
            sqs._ensure_msg_fields(message)
        result = fair_order(q["messages"], now, max_n)
        for message in result:  # as ministack marks a received message
            message["receipt_handle"] = sqs.new_uuid()
            message["visible_at"] = now + vis_timeout
            message["receive_count"] += 1
            if message.get("first_receive_at") is None:
                message["first_receive_at"] = now
        return result

    sqs._collect_msgs = collect_msgs


SCHEDULER_SOURCES = {
    "_ticker_loop": "51e1b1334023fb4a632d898aa0130eed4b945c6bd7c99cd171ca636436dc7f6d",
    "_tick_schedules": "0ece514e91205b1dfd40a5a18ba84b213cd58e1623601bdc62648a02b6b44d2f",
    "start_scheduler": "04a12e5e9f1eed76f01735d739325700e24ddf04b9c7b6b48ec2944c404d5aa2",
}
SCHEDULER_TICK_MARGIN_SECONDS = 0.005  # past the whole second, so an at() due at that second is never missed


def _check_sources(module: Any, expected: dict[str, str]) -> None:
    installed = _installed_version()
    _refuse_changed(installed, {name: _source_hash(getattr(module, name)) for name in expected}, expected)


def apply_scheduler_on_the_second() -> None:
    """5. EventBridge Scheduler fires a due schedule at its second, not up to 10 s later in one burst.

    ministack sweeps its schedules every 10 s (`_SCHEDULE_TICK_INTERVAL`, services/scheduler.py), so
    an at() schedule fires 0-10 s late and a herd of crons due at one second arrives as one burst
    with the next sweep. AWS invokes a schedule's target at its time (at(), rate() and cron() all
    have one-second or coarser granularity). Here the sweep runs just after every whole second.
    """
    from ministack.services import scheduler

    if getattr(scheduler, "_corral_patched", False):
        return
    _check_sources(scheduler, SCHEDULER_SOURCES)

    def ticker_loop() -> None:
        while True:
            now = time.time()
            time.sleep(1.0 - now % 1.0 + SCHEDULER_TICK_MARGIN_SECONDS)
            try:
                scheduler._tick_schedules()
            except Exception:
                scheduler.logger.exception("Scheduler ticker error")

    scheduler._SCHEDULE_TICK_INTERVAL = 1
    scheduler._ticker_loop = ticker_loop  # start_scheduler() looks it up when the gateway starts
    scheduler._corral_patched = True


WARM_WAIT_ENV = "CORRAL_MINISTACK_WARM_WAIT"
# About what a cold start of this code costs a request on AWS: no request waits longer for a warm
# environment than AWS would make it wait for a new one.
WARM_WAIT_SECONDS = 1.0
LEASE_SOURCES = {"release_worker": "25d5dd7d42b6e30ce6843a33cf159b418d185f46bfa0a76a64268ea83e203cdc"}


def warm_wait() -> float:
    override = os.environ.get(WARM_WAIT_ENV)
    return float(override) if override else WARM_WAIT_SECONDS


def apply_wait_for_a_warm_environment() -> None:
    """6. A request that finds every warm environment busy waits briefly for one before cold-starting another.

    ministack starts a new environment for every concurrent invocation that finds none idle, in the
    request's path: unpack ~60 MB, start Python, import the handler — 3-10 s on 2 cores, while the
    unzip holds the emulator's GIL and slows every other environment. A burst of API requests
    (the midnight herd) thus turned into a storm of side-by-side cold starts, and enqueues got no
    answer within 10 s. On AWS a cold start costs the request that meets it ~1 s on capacity of
    its own and nobody else anything. Here, when the function already has a warm environment that
    is busy, the lease waits up to warm_wait() (1 s, the cost of that AWS cold start) for one to be
    released, and only then starts a new one, one at a time: while a start is under way, further
    leases wait for the first release (that start's own included: it is ready before a second one
    started now would be, on the same cores), at most the function's timeout. A warm environment
    answering in milliseconds serves them instead of a storm of local cold starts.
    A function with no warm environment yet (the first requests, the pre-warm) starts them as before.
    Apply after apply(): it wraps the corrected lease.
    """
    from ministack.core import lambda_runtime as runtime
    from ministack.services import lambda_svc

    if getattr(runtime, "_corral_warm_wait", False):
        return
    _check_sources(runtime, LEASE_SOURCES)
    inner_acquire, inner_release = runtime.acquire_worker, runtime.release_worker
    freed = threading.Condition()
    releases = [0]  # how many leases have been released: a waiter that saw n waits for n + 1

    def release_worker(worker: Any) -> None:
        inner_release(worker)
        with freed:
            releases[0] += 1
            freed.notify_all()

    def acquire_worker(
        func_name: str,
        config: dict,
        code_zip: bytes,
        qualifier: str = "$LATEST",
        max_concurrency: int | None = None,
    ) -> tuple[Any, str]:
        if warm_wait() <= 0:  # CORRAL_MINISTACK_WARM_WAIT=0: ministack's own lease (corrected)
            return inner_acquire(func_name, config, code_zip, qualifier, max_concurrency)
        key = runtime._worker_key(func_name, config, qualifier)
        now = time.monotonic()
        deadline, last_resort = now + warm_wait(), now + float(config.get("Timeout", 3))
        while True:
            with freed:
                seen = releases[0]
            with runtime._lock:
                entries = runtime._workers.get(key, [])
                idle = next((w for w in entries if not w.in_use and _is_live(w)), None)
                dead = any(not w.in_use and _is_dead(w) for w in entries)
                if idle is not None and not dead:  # taken under the lock, so one release serves one waiter
                    idle.in_use = True
                    idle.last_used = time.time()
                    return idle, "reused"
                warm_busy = any(w.in_use and not getattr(w, "_cold", True) and _is_live(w) for w in entries)
                starting = any(w.in_use and getattr(w, "_cold", True) for w in entries)  # a cold start under way
            now = time.monotonic()
            # Start another only after the wait, and only when no start is under way: that one will
            # be ready before a new one would, on the same cores.
            waited = now >= deadline and not starting
            if idle is not None or not warm_busy or waited or now >= last_resort:  # the corrected lease
                return inner_acquire(func_name, config, code_zip, qualifier, max_concurrency)
            with freed:
                if releases[0] == seen:
                    freed.wait((deadline if now < deadline else last_resort) - now)

    runtime.acquire_worker = lambda_svc.acquire_worker = acquire_worker
    runtime.release_worker = lambda_svc.release_worker = release_worker
    runtime._corral_warm_wait = True


SHARED_CODE_PREFIX = "corral-ministack-code-"


def _environment_dir(path: str) -> bool:
    """An environment's code or layer folder as Worker._spawn makes them: <tmp>/ministack-lambda-*/code|layer_N."""
    parent, name = os.path.split(os.path.realpath(path))
    return os.path.basename(parent).startswith("ministack-lambda-") and (name == "code" or name.startswith("layer_"))


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def apply_shared_code_extraction() -> None:
    """8. An execution environment's cold start unpacks nothing that another already unpacked.

    ministack's Worker._spawn extracts the function's code zip and every layer zip into a fresh
    temporary folder for each environment (and deletes the last one's first): ~60 MB / 4,400 files
    for the worker, several seconds on 2 cores, inside the emulator's process, so its GIL-heavy
    unzip slows every other environment's SQS and DynamoDB calls while it runs (the re-warm after a
    killed worker made every job in the next ~2 s wait 150-300 ms per call). On AWS a new
    environment costs the request that meets it its own init and nobody else anything, and its
    code (/var/task, /opt) is read-only. Here each zip is extracted once per emulator, keyed by its
    sha256, into a shared folder, and an environment's code/layer folder is a symlink to it: read-only
    sharing as on AWS (a function writing into its own code folder would fail on AWS; here the write
    would be shared). Only Worker._spawn's folders are redirected; every other extraction is ministack's.
    Apply after apply(), whose version check covers Worker._spawn (the caller of extractall relied on).
    """
    import atexit
    import shutil
    import tempfile
    import zipfile

    from ministack.core import lambda_runtime as runtime

    if getattr(runtime, "_corral_shared_code", False):
        return
    _installed_version()
    if not getattr(runtime, "_corral_patched", False):
        raise UnsupportedMinistack("apply_shared_code_extraction() needs apply() first (it checks Worker._spawn)")
    root = tempfile.mkdtemp(prefix=SHARED_CODE_PREFIX)
    atexit.register(shutil.rmtree, root, True)
    extract = zipfile.ZipFile.extractall
    guard = threading.Lock()
    locks: dict[str, threading.Lock] = {}

    def extractall(self: zipfile.ZipFile, path: Any = None, members: Any = None, pwd: Any = None) -> None:
        target = os.fspath(path) if path is not None else None
        if target is None or members is not None or pwd is not None or not self.filename:
            return extract(self, path, members, pwd)
        if not _environment_dir(target) or os.listdir(target):
            return extract(self, path, members, pwd)
        digest = _file_sha256(self.filename)
        with guard:
            lock = locks.setdefault(digest, threading.Lock())
        shared = os.path.join(root, digest)
        with lock:
            if not os.path.isdir(shared):
                partial = shared + ".partial"
                shutil.rmtree(partial, ignore_errors=True)
                extract(self, partial)
                os.rename(partial, shared)
        os.rmdir(target)
        os.symlink(shared, target)  # rmtree of the environment's folder unlinks it, never follows it
        return None

    zipfile.ZipFile.extractall = extractall
    runtime._corral_shared_code = True


def apply_all() -> None:
    apply()
    apply_scheduler_on_the_second()
    apply_wait_for_a_warm_environment()
    apply_shared_code_extraction()


def main() -> None:
    try:
        apply_all()
    except UnsupportedMinistack as refused:
        print(f"error: {refused}", file=sys.stderr)
        sys.exit(REFUSED_EXIT_CODE)
    from ministack.app import main as ministack_main

    sys.exit(ministack_main())


if __name__ == "__main__":
    main()
