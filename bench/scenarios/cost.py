"""Cost of our own code, as ratios measured in the same run.

- Enqueue: the API handler called in-process with a synthetic HTTP API event (routing,
  validation, auth from the key cache, id minting, the SendMessage, the access log line)
  vs a bare boto3 `send_message` of the same body size to the same emulator queue.
- Cold start: `import functions.api.handler` vs `import boto3`, each in fresh interpreters, from
  the built code asset and dependencies layer as a function imports them (their bytecode
  included; only those two on the path), or from the checkout when they are not built.

`python -m bench.scenarios.cost enqueue` is the child process the benchmark starts with the
emulator's endpoint and the functions' environment, so nothing leaks into the runner.
`python -m bench.scenarios.cost [module ...]` prints the cold-start figures alone (default: the API's handler).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
_IMPORT_TIMER = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


BUILD = ROOT / ".corral" / "build"  # infra/bundling.py's output: the code asset and the layer
_ASSET_PATH = [BUILD / "code", BUILD / "layer" / "python"]


def import_seconds(module: str) -> float:
    """Time to import `module` in a fresh interpreter (the interpreter's own startup excluded).

    From the built asset and layer when they exist (`python -S`: nothing else on the path, as in
    a function), else from the checkout and the venv.
    """
    built = all(path.is_dir() for path in _ASSET_PATH)
    command = [sys.executable, *(["-S"] if built else []), "-c", _IMPORT_TIMER.format(module=module)]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # measure what ships, write nothing
    if built:
        env["PYTHONPATH"] = os.pathsep.join(str(path) for path in _ASSET_PATH)
    # In the asset's folder, as a function runs in its code's (-c puts the working folder first on the path).
    out = subprocess.run(
        command, cwd=_ASSET_PATH[0] if built else ROOT, capture_output=True, text=True, check=True, env=env
    )
    return float(out.stdout.strip().splitlines()[-1])


def cold_start(runs: int = 7, module: str = "functions.api.handler") -> dict[str, float]:
    """Fastest of `runs` interleaved imports each: an import is fixed work, so on a shared
    machine the minimum is the estimate least inflated by other processes' load."""
    handler, boto3 = [], []
    for _ in range(runs):
        handler.append(import_seconds(module))
        boto3.append(import_seconds("boto3"))
    fastest_handler, fastest_boto3 = min(handler), min(boto3)
    return {
        "import_handler_ms": fastest_handler * 1000,
        "import_boto3_ms": fastest_boto3 * 1000,
        "ratio": fastest_handler / fastest_boto3,
        "from_asset": float(all(path.is_dir() for path in _ASSET_PATH)),
    }


def enqueue_cost(aws_env: dict[str, str], function_env: dict[str, str], api_key: str, rounds: int) -> dict[str, float]:
    """Runs the child below; returns per-enqueue medians (ms) and their ratio."""
    env = {**os.environ, **aws_env, **function_env, "POWERTOOLS_SERVICE_NAME": "corral-api"}
    out = subprocess.run(
        [sys.executable, "-m", "bench.scenarios.cost", "enqueue", api_key, str(rounds)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"the enqueue-cost child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _child(api_key: str, rounds: int) -> None:
    import contextlib
    import io

    import boto3

    from functions.api.handler import handler
    from local.events import FakeLambdaContext, http_api_event  # the unit tests' synthetic API event
    from shared import environment

    body = {"type": "echo", "payload": {"n": 1}}
    event = http_api_event("POST", "/v1/jobs", body, api_key)
    context = FakeLambdaContext()
    sqs = boto3.client("sqs")
    queue_url = environment.current().queue_url
    bare_body = "x" * 180  # about the size of the message the handler sends

    def timed_handler() -> float:
        started = time.perf_counter()
        response = handler(event, context)
        elapsed = time.perf_counter() - started
        assert response["statusCode"] == 202, response
        return elapsed

    def timed_send() -> float:
        started = time.perf_counter()
        sqs.send_message(QueueUrl=queue_url, MessageBody=bare_body)
        return time.perf_counter() - started

    handler_times: list[float] = []
    send_times: list[float] = []
    with contextlib.redirect_stdout(io.StringIO()):  # the access log lines; Lambda ships them, we drop them
        for _ in range(10):  # warm both: key cache, id secret, connections
            timed_handler()
            timed_send()
        # Call by call, so the emulator's own background work (its pollers, its sweeps) lands on both sides
        # alike: in blocks of 20 (~50 ms each) it fell on one side's blocks more than the other's, and the ratio
        # of one run moved by 0.3 with the same code (docs/benchmark.md "The API's cost").
        for _ in range(rounds):
            handler_times.append(timed_handler())
            send_times.append(timed_send())
    handler_ms = statistics.median(handler_times) * 1000
    send_ms = statistics.median(send_times) * 1000
    own_ms = _own_code_ms(lambda: handler(event, context))
    print(
        json.dumps(
            {
                "handler_ms": handler_ms,
                "send_message_ms": send_ms,
                "ratio": handler_ms / send_ms,
                "own_code_ms": own_ms,
                "own_code_over_send": own_ms / send_ms,
            }
        )
    )


def _own_code_ms(call_handler: Callable[[], object]) -> float:
    """The handler's own work per enqueue (routing, key, checks, id, message, log line, metrics), its
    SendMessage replaced by a no-op: the fastest of 5 blocks of 1,000, so the emulator's and the
    machine's noise stay out. What the handler adds to a send, wherever the send is answered."""
    from shared.jobs import enqueue  # in the child, with the functions' environment

    real_send = enqueue.queue.send
    enqueue.queue.send = lambda message, delay_seconds=0: None
    try:
        return min(timeit.repeat(call_handler, number=1000, repeat=5))  # seconds per 1,000 = ms per call
    finally:
        enqueue.queue.send = real_send


if __name__ == "__main__":
    if sys.argv[1:2] == ["enqueue"]:
        _child(sys.argv[2], int(sys.argv[3]))
    else:
        for module in sys.argv[1:] or ["functions.api.handler"]:
            print(json.dumps({"module": module, **cold_start(module=module)}))
