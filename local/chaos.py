"""Fault injection into a running embedded stack, through its sidecars (local/sidecars.py).

The fault proxy and the status cache (DAX's stand-in) inject the faults; the emulator's Lambda subprocesses are
what a kill ends. The same client serves the tests, the benchmark and this command line:

    python -m local.chaos blip --seconds 5 [--service dynamodb|sqs] [--mode mixed|throttle|error|latency]
    python -m local.chaos kill-worker          # SIGKILL every corral-worker process of this emulator
    python -m local.chaos stats                # requests, injected faults, cache hits
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from local.ministack import STATE, worker_pids
from local.sidecars import ADDRESSES_FILE
from shared import settings


@dataclass(frozen=True)
class Chaos:
    """Faults against one running stack (its fault proxy, status cache and emulator)."""

    proxy_url: str
    cache_url: str
    emulator: str

    @classmethod
    def of(cls, state_dir: Path = STATE) -> Chaos:
        return cls(**json.loads((state_dir / ADDRESSES_FILE).read_text()))

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
