"""The stand-ins the embedded stack's functions talk through, supervised as subprocesses.

`Sidecars` starts the fault proxy (local/fault_proxy.py, in front of the emulator's DynamoDB and
SQS) and the status cache (local/dax_standin.py: DAX's stand-in, in front of the emulator's
DynamoDB, injecting the proxy's faults itself: one hop for job items), and gives the function
environment that wires the deployed functions through them. It writes their addresses to <state dir>/sidecars.json,
where `python -m local.chaos` finds them to inject faults.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from local.ministack import STATE
from shared import environment

ROOT = Path(__file__).resolve().parent.parent
ADDRESSES_FILE = "sidecars.json"


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
            cache = _start("local.dax_standin", cache_port, self.emulator_endpoint, log)
            self.processes.append(cache)
            _wait_listening(self.cache_url, "/_status_cache/stats", cache)
        except Exception:
            self.stop()
            raise
        (self.state_dir / ADDRESSES_FILE).write_text(
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
