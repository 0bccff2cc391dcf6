"""The faults the scenario injects, each an event action: (context) -> note for the report.

Killing a worker is small enough to do here: the embedded emulator runs each concurrent
worker invocation as a subprocess in its own process group, so SIGKILL one of those. The store
blip needs the fault proxy (issue 5) and the crons due at the herd second need the schedules
herd (issue 4, bench/herd.py): until they are wired in, their actions raise NotImplementedError
and the report shows them as not wired.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shared import settings


def _pids_with_environment(entry: str) -> Iterator[int]:
    """Pids whose environment holds `entry` (NAME=value); processes we cannot read are skipped."""
    wanted = entry.encode()
    for path in Path("/proc").iterdir():
        if not path.name.isdigit():
            continue
        try:
            if wanted in (path / "environ").read_bytes().split(b"\0"):
                yield int(path.name)
        except OSError:
            continue  # gone meanwhile, or not ours to read


def worker_processes(emulator_pgid: int) -> list[int]:
    """Pids of the worker function's execution environments started by our emulator (and no one else's)."""
    found = []
    for pid in _pids_with_environment(f"AWS_LAMBDA_FUNCTION_NAME={settings.WORKER_FUNCTION}"):
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(pid) == emulator_pgid:
                found.append(pid)
    return found


def emulator_pgid(port: int) -> int:
    """The process group of the ministack serving `port` (a stack started by `make up`)."""
    for pid in _pids_with_environment(f"GATEWAY_PORT={port}"):
        with contextlib.suppress(OSError):
            if b"ministack" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return os.getpgid(pid)
    raise RuntimeError(f"no ministack process serves port {port}")


def kill_worker(context: Any) -> str:
    """SIGKILL one worker execution environment, mid-batch if one is busy (under load most are)."""
    pids = worker_processes(context.emulator_pgid)
    if not pids:
        return "no worker process alive to kill"
    victim = random.choice(pids)
    os.kill(victim, signal.SIGKILL)
    return f"SIGKILLed worker pid {victim} (1 of {len(pids)})"


def store_blip(context: Any) -> str:
    raise NotImplementedError(
        "store blip: wire issue 5's DynamoDB fault proxy here (a window of throttling/5xx answers to the functions)"
    )


def herd_crons(context: Any) -> str:
    raise NotImplementedError(
        "crons due at the herd second: wire bench/herd.py (issue 4) here; the herd is API enqueues at 3x until then"
    )
