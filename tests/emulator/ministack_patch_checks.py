"""Checks of local/ministack_patch.py against the real ministack runtime, run in the emulator's venv.

tests/unit/local/test_ministack_patch.py runs `<ministack venv>/bin/python -P this_file <check>` once per
check (ministack is not installed in the project's venv). Each check spawns real Lambda worker
processes from a tiny handler zip; a failed assert exits non-zero with its message.
"""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HANDLER = """
import os, time
time.sleep(float(os.environ.get("INIT_SLEEP", "0")))

def handler(event, context):
    if event.get("raise"):
        raise ValueError("the handler failed")
    if event.get("exit"):
        os._exit(1)
    return {"pid": os.getpid()}
"""


def load_patch() -> Any:
    spec = importlib.util.spec_from_file_location("corral_ministack_patch", ROOT / "local" / "ministack_patch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", HANDLER)
    return buffer.getvalue()


def _config(name: str, init_sleep: float = 0) -> dict[str, Any]:
    return {
        "FunctionName": name,
        "FunctionArn": f"arn:aws:lambda:us-east-1:000000000000:function:{name}",
        "Runtime": "python3.11",
        "Handler": "index.handler",
        "Timeout": 20,
        "Environment": {"Variables": {"INIT_SLEEP": str(init_sleep)}},
    }


def _lease(runtime: Any, name: str, init_sleep: float = 0) -> Any:
    worker, _reason = runtime.acquire_worker(name, _config(name, init_sleep), _code_zip())
    return worker


def check_version_is_enforced() -> None:
    patch = load_patch()
    patch.check_supported()  # the installed 1.5.33 passes
    patch.version = lambda _name: "1.5.34"
    try:
        patch.check_supported()
    except patch.UnsupportedMinistack as refused:
        assert "1.5.33" in str(refused) and "1.5.34" in str(refused), refused
    else:
        raise AssertionError("another ministack version was accepted")
    later_corrections = (
        patch.apply_scheduler_on_the_second,
        patch.apply_wait_for_a_warm_environment,
        patch.apply_shared_code_extraction,
    )
    for later_correction in later_corrections:
        try:
            later_correction()
        except patch.UnsupportedMinistack as refused:
            assert "1.5.34" in str(refused), refused
        else:
            raise AssertionError(f"{later_correction.__name__} accepted another ministack version")


def check_a_handler_error_keeps_the_environment() -> None:
    load_patch().apply()
    from ministack.core import lambda_runtime as runtime

    worker = _lease(runtime, "handler-error")
    try:
        pid = worker.invoke({}, "r1")["result"]["pid"]
        failed = worker.invoke({"raise": True}, "r2")
        assert failed["status"] == "error" and "the handler failed" in failed["error"], failed
        assert worker._proc is not None and worker._proc.pid == pid and worker._proc.poll() is None
        assert worker.invoke({}, "r6")["result"]["pid"] == pid, "the environment was replaced after a handler error"
    finally:
        runtime.release_worker(worker)
        runtime.kill_workers([worker])


def check_a_dying_process_ends_its_environment() -> None:
    load_patch().apply()
    from ministack.core import lambda_runtime as runtime

    worker = _lease(runtime, "dies")
    try:
        worker.invoke({}, "r1")
        died = worker.invoke({"exit": True}, "r2")
        assert died["status"] == "error" and "died" in died["error"], died
        assert worker._proc is None and worker._corral_dead
    finally:
        runtime.release_worker(worker)
        runtime.kill_workers([worker])


def check_a_lease_prefers_a_live_environment_and_rewarms_the_dead_one() -> None:
    load_patch().apply()
    from ministack.core import lambda_runtime as runtime

    first, second = _lease(runtime, "pool"), _lease(runtime, "pool")
    try:
        for worker in (first, second):
            worker.invoke({}, "warm")
        runtime.release_worker(first)
        runtime.release_worker(second)
        first._proc.kill()  # the first entry, which ministack 1.5.33 would lease and respawn on the batch path
        first._proc.wait(5)
        leased = _lease(runtime, "pool")
        assert leased is second, "a dead environment was leased while a live one was idle"
        runtime.release_worker(leased)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pool = runtime._workers[runtime._worker_key("pool", _config("pool"), "$LATEST")]
            ready = [w for w in pool if w._start_time and not w.in_use and w._proc and w._proc.poll() is None]
            if first not in pool and len(ready) == 2:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the dead environment was not replaced off the batch path: {pool}")
    finally:
        runtime.reset()


def check_init_is_bounded() -> None:
    os.environ["CORRAL_MINISTACK_INIT_TIMEOUT"] = "1"
    load_patch().apply()
    from ministack.core import lambda_runtime as runtime

    worker = _lease(runtime, "slow-init", init_sleep=30)
    started = time.monotonic()
    try:
        failed = worker.invoke({}, "r1")
        assert failed["status"] == "error" and "Init did not finish within 1 s" in failed["error"], failed
        assert time.monotonic() - started < 15, "the init was not cut at its limit"
        assert worker._corral_dead
    finally:
        runtime.release_worker(worker)
        runtime.kill_workers([worker])


def check_a_failed_batch_lowers_concurrency_instead_of_pausing_the_mapping() -> None:
    load_patch().apply()
    from ministack.services import lambda_svc

    failed = {"error": True, "body": {"errorType": "Runtime.HandlerError", "errorMessage": "boom"}, "log": ""}
    lambda_svc._execute_function = lambda _func, _event: failed
    esm = {"UUID": "esm-1", "FunctionName": "f", "ScalingConfig": {"MaximumConcurrency": 8}}

    def concurrency() -> int:
        return lambda_svc._sqs_esm_concurrency(esm, {}, {}, None)

    assert concurrency() == 8
    lambda_svc._ESM_BACKOFF_SECONDS = 60.0  # the backoff window, long enough that a slow machine cannot outlast it
    for expected in (7, 6):
        lambda_svc._run_sqs_batch(esm, {}, {"Records": []}, [], "queue-url", "queue")
        assert esm["LastProcessingResult"] == "FAILED"
        assert lambda_svc._esm_backoff_until.get("esm-1", 0) <= time.time(), "the whole mapping was paused"
        assert concurrency() == expected
    lambda_svc._ESM_BACKOFF_SECONDS = 0.0  # the window has passed
    assert concurrency() == 8, "the concurrency did not come back"


def check_a_standard_queue_receives_the_quiet_group_ahead_of_a_backlog() -> None:
    load_patch().apply()
    from ministack.services import sqs

    def send(url: str, group: str | None, body: str) -> None:
        data: dict[str, Any] = {"QueueUrl": url, "MessageBody": body}
        if group:
            data["MessageGroupId"] = group
        sqs._act_send_message(data, url)

    def receive(url: str, count: int) -> list[str]:
        return [message["body"] for message in sqs._receive_messages_for_esm(url, count)]

    url = sqs._act_create_queue({"QueueName": "fair", "Attributes": {}}, "")["QueueUrl"]
    for n in range(30):
        send(url, "noisy", f"noisy-{n}")
    assert receive(url, 10) == [f"noisy-{n}" for n in range(10)], "one group alone: oldest first"
    send(url, "quiet", "quiet-0")
    send(url, None, "no-group")
    send(url, "quiet", "quiet-1")
    second = receive(url, 3)
    assert second == ["quiet-0", "no-group", "quiet-1"], f"the backlog went first: {second}"
    assert receive(url, 2) == ["noisy-10", "noisy-11"]  # the noisy group still drains, oldest first

    fifo = sqs._act_create_queue(
        {"QueueName": "fair.fifo", "Attributes": {"FifoQueue": "true", "ContentBasedDeduplication": "true"}}, ""
    )["QueueUrl"]
    for n in range(3):
        send(fifo, "noisy", f"fifo-{n}")
    send(fifo, "quiet", "fifo-quiet")
    got = receive(fifo, 10)
    assert got == ["fifo-0", "fifo-1", "fifo-2", "fifo-quiet"], f"a FIFO queue is not received as ministack does: {got}"


def check_scheduler_fires_at_the_due_second() -> None:
    load_patch().apply_scheduler_on_the_second()
    from datetime import UTC, datetime

    from ministack.services import eventbridge, scheduler

    fired: list[float] = []
    eventbridge._invoke_target = lambda _target, _event, _schedule: fired.append(time.time())
    due = int(time.time()) + 2
    at = datetime.fromtimestamp(due, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    body = {
        "ScheduleExpression": f"at({at})",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {"Arn": "arn:aws:sqs:us-east-1:000000000000:q", "RoleArn": "arn:aws:iam::000000000000:role/r"},
    }
    scheduler._create_schedule("due-soon", body)
    scheduler.start_scheduler()
    deadline = time.monotonic() + 15
    while not fired and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fired, "the schedule never fired"
    assert fired[0] >= due and fired[0] - due < 0.5, f"fired {fired[0] - due:.2f} s after its due second"


def check_a_busy_warm_environment_is_awaited_before_a_cold_start() -> None:
    patch = load_patch()
    patch.apply()
    os.environ[patch.WARM_WAIT_ENV] = "5"
    patch.apply_wait_for_a_warm_environment()
    import threading

    from ministack.core import lambda_runtime as runtime

    try:
        warm = _lease(runtime, "busy")
        warm.invoke({}, "warm")  # now warm, and still leased: busy
        threading.Timer(0.5, runtime.release_worker, args=(warm,)).start()
        started = time.monotonic()
        leased, reason = runtime.acquire_worker("busy", _config("busy"), _code_zip())
        waited = time.monotonic() - started
        assert leased is warm and reason == "reused", f"a second environment was started: {reason}"
        assert 0.3 < waited < 4, f"waited {waited:.2f} s"
        os.environ[patch.WARM_WAIT_ENV] = "0.3"  # nobody releases: after the wait, a new one starts
        started = time.monotonic()
        other, reason = runtime.acquire_worker("busy", _config("busy"), _code_zip())
        assert other is not warm and reason == "spawn", reason
        assert time.monotonic() - started < 3
        # While that start is under way, a further lease waits past the 0.3 s for a release, not a third start.
        threading.Timer(1.0, runtime.release_worker, args=(warm,)).start()
        started = time.monotonic()
        third, reason = runtime.acquire_worker("busy", _config("busy"), _code_zip())
        assert third is warm and reason == "reused", f"a second start began while one was under way: {reason}"
        assert time.monotonic() - started > 0.8
        _fresh, reason = runtime.acquire_worker("cold", _config("cold"), _code_zip())
        assert reason == "spawn", "a function with no warm environment must start one at once"
    finally:
        runtime.reset()


def check_a_cold_start_unpacks_nothing_another_environment_unpacked() -> None:
    patch = load_patch()
    patch.apply()
    patch.apply_shared_code_extraction()
    from ministack.core import lambda_runtime as runtime

    first, second = _lease(runtime, "shared"), _lease(runtime, "shared")
    try:
        pids = {worker.invoke({}, name)["result"]["pid"] for worker, name in ((first, "r1"), (second, "r2"))}
        assert len(pids) == 2, "two environments, two processes"
        folders = [os.path.join(worker._tmpdir, "code") for worker in (first, second)]
        assert all(os.path.islink(folder) for folder in folders), folders
        assert len({os.path.realpath(folder) for folder in folders}) == 1, "the code was unpacked twice"
        shared = os.path.realpath(folders[0])
        assert os.path.basename(os.path.dirname(shared)).startswith(patch.SHARED_CODE_PREFIX), shared
        assert os.path.exists(os.path.join(shared, "index.py"))
    finally:
        runtime.reset()
    assert os.path.exists(os.path.join(shared, "index.py")), "removing an environment removed the shared code"
    buffer = io.BytesIO()  # any other extraction is ministack's own
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.txt", "a")
    elsewhere = Path(f"/tmp/corral-check-{os.getpid()}")
    try:
        with zipfile.ZipFile(buffer) as archive:
            archive.extractall(elsewhere)
        assert (elsewhere / "a.txt").is_file() and not elsewhere.is_symlink()
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)


if __name__ == "__main__":
    globals()[f"check_{sys.argv[1]}"]()
    print("ok")
