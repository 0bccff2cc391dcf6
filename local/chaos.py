"""Fault injection for the embedded stack: the stand-ins the functions talk through, and the faults.

`Sidecars` starts the fault proxy (in front of the emulator's DynamoDB and SQS) and
the status cache (DAX's stand-in, in front of the emulator's DynamoDB, injecting the
proxy's faults itself: one hop for job items) as subprocesses and
gives the function environment that wires the deployed functions through them.
tests/platform.py and `make up` both use it, so tests and the benchmark inject
faults the same way:

    python -m local.chaos blip --seconds 5 [--service dynamodb|sqs] [--mode mixed|throttle|error|latency]
    python -m local.chaos kill-worker          # SIGKILL every corral-worker process of this emulator
    python -m local.chaos stats                # requests, injected faults, cache hits
    python -m local.chaos measure              # rough GetItem rate: emulator, fault proxy, status cache
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import requests

from local.ministack import CREDENTIALS, STATE
from shared import environment, settings

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(module: str, port: int, upstream: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", module, "--port", str(port), "--upstream", upstream],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _wait_listening(url: str, path: str, process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited with {process.returncode}")
        try:
            requests.get(url + path, timeout=1)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not start in {timeout:.0f}s")


@dataclass
class Sidecars:
    """The fault proxy and the status cache, for one emulator."""

    emulator_endpoint: str
    state_dir: Path = STATE
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    proxy_url: str = ""
    cache_url: str = ""

    def start(self) -> None:
        log = self.state_dir / "sidecars.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        proxy_port, cache_port = _free_port(), _free_port()
        self.proxy_url, self.cache_url = f"http://127.0.0.1:{proxy_port}", f"http://127.0.0.1:{cache_port}"
        try:
            proxy = _start("local.fault_proxy", proxy_port, self.emulator_endpoint, log)
            self.processes.append(proxy)
            _wait_listening(self.proxy_url, "/_faults/stats", proxy)
            cache = _start("local.status_cache", cache_port, self.emulator_endpoint, log)
            self.processes.append(cache)
            _wait_listening(self.cache_url, "/_status_cache/stats", cache)
        except Exception:
            self.stop()
            raise
        (self.state_dir / "sidecars.json").write_text(
            json.dumps({"proxy_url": self.proxy_url, "cache_url": self.cache_url, "emulator": self.emulator_endpoint})
        )

    def function_env(self, sqs_through_proxy: bool = True) -> dict[str, str]:
        """Service-specific endpoints win over the AWS_ENDPOINT_URL the emulator injects.

        `sqs_through_proxy=False` keeps the enqueue path (the API's SendMessage) off the proxy,
        for load runs where the extra hop would be measured instead of the platform.
        """
        env = {
            "AWS_ENDPOINT_URL_DYNAMODB": self.proxy_url,
            environment.variable("status_cache_endpoint"): self.cache_url,
        }
        return env | ({"AWS_ENDPOINT_URL_SQS": self.proxy_url} if sqs_through_proxy else {})

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)
        self.processes.clear()


@dataclass(frozen=True)
class Chaos:
    """Faults against one running stack (its fault proxy, status cache and emulator)."""

    proxy_url: str
    cache_url: str
    emulator: str

    @classmethod
    def of(cls, state_dir: Path = STATE) -> Chaos:
        return cls(**json.loads((state_dir / "sidecars.json").read_text()))

    @property
    def _fault_injectors(self) -> tuple[str, str]:
        # The fault proxy, and the status cache, which injects the same faults into what passes it.
        return self.proxy_url, self.cache_url

    def blip(self, seconds: float, service: str = "dynamodb", mode: str = "mixed", latency_ms: int = 200) -> None:
        order = {"service": service, "seconds": seconds, "mode": mode, "latency_ms": latency_ms}
        for url in self._fault_injectors:
            requests.post(f"{url}/_faults/blip", json=order, timeout=5).raise_for_status()

    def clear(self) -> None:
        for url in self._fault_injectors:
            requests.post(f"{url}/_faults/clear", timeout=5).raise_for_status()

    def stats(self) -> dict[str, Any]:
        """Requests and injected faults by service and operation, summed over both injectors ("proxy"),
        and the status cache's hits and misses ("status_cache")."""
        injected: Counter[str] = Counter()
        for url in self._fault_injectors:
            injected.update(requests.get(f"{url}/_faults/stats", timeout=5).json())
        return {
            "proxy": dict(injected),
            "status_cache": requests.get(f"{self.cache_url}/_status_cache/stats", timeout=5).json(),
        }

    def store_requests(self, job_id: str) -> list[dict[str, Any]]:
        """The DynamoDB requests for one job's item that reached the store, through the status cache
        (the functions' job items) or the proxy (anything else)."""
        found: list[dict[str, Any]] = []
        for url in self._fault_injectors:
            response = requests.get(f"{url}/_faults/requests", params={"pk": f"job#{job_id}"}, timeout=5)
            found += response.json()
        return found

    def kill_worker(self, function: str = settings.WORKER_FUNCTION) -> list[int]:
        """SIGKILL every process running `function` under this emulator; the pids killed."""
        killed = []
        for pid in worker_pids(self.emulator, function):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        return killed


def worker_pids(emulator: str, function: str) -> list[int]:
    """Lambda subprocesses of `function` spawned by the emulator at `emulator` (found by their environment)."""
    port = emulator.rsplit(":", 1)[-1]
    wanted = {f"AWS_LAMBDA_FUNCTION_NAME={function}".encode(), f"GATEWAY_PORT={port}".encode()}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = set((entry / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue  # gone, or not ours
        if wanted <= environ:
            pids.append(int(entry.name))
    return pids


def measure_get_item(endpoint: str, total: int = 1500, threads: int = 4) -> float:
    """GetItem of one key `total` times from `threads` threads through `endpoint`; requests per second."""
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    key = {"pk": {"S": "measure#status-cache"}}
    dynamodb.get_item(TableName=settings.TABLE_NAME, Key=key)  # warm the connection (and the cache entry)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda _: dynamodb.get_item(TableName=settings.TABLE_NAME, Key=key), range(total)))
    return total / (time.monotonic() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", type=Path, default=STATE, help="the stack's state dir (default .corral)")
    commands = parser.add_subparsers(dest="command", required=True)
    blip = commands.add_parser("blip", help="make DynamoDB (or SQS) fail for a window")
    blip.add_argument("--seconds", type=float, default=5)
    blip.add_argument("--service", choices=("dynamodb", "sqs"), default="dynamodb")
    blip.add_argument("--mode", choices=("mixed", "throttle", "error", "latency"), default="mixed")
    blip.add_argument("--latency-ms", type=int, default=200)
    commands.add_parser("clear", help="close every fault window")
    commands.add_parser("kill-worker", help="SIGKILL the worker function's processes")
    commands.add_parser("stats", help="requests, injected faults, status cache hits")
    commands.add_parser("measure", help="rough GetItem rate direct, through the fault proxy, through the cache")
    args = parser.parse_args()
    chaos = Chaos.of(args.state)
    match args.command:
        case "blip":
            chaos.blip(args.seconds, args.service, args.mode, args.latency_ms)
            print(f"{args.service} {args.mode} for {args.seconds:g}s")
        case "clear":
            chaos.clear()
        case "kill-worker":
            print(f"killed {chaos.kill_worker() or 'nothing (no worker process running)'}")
        case "stats":
            print(json.dumps(chaos.stats(), indent=2))
        case "measure":
            for name, url in (
                ("emulator", chaos.emulator),
                ("fault proxy", chaos.proxy_url),
                ("status cache", chaos.cache_url),
            ):
                print(f"{name:>12}: {measure_get_item(url):6.0f} GetItem/s (1,500 requests, 4 threads)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
