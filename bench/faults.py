"""The faults the scenario injects, each an event action: (context) -> note for the report.

Killing a worker is small enough to do here: the embedded emulator runs each concurrent
worker invocation as a subprocess in its own process group, so SIGKILL one of those. The store
blip needs the fault proxy (issue 5) and the crons due at the herd second need the schedules
herd (issue 4, bench/herd.py): until they are wired in, their actions raise NotImplementedError
and the report shows them as not wired.
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path
from typing import Any

from shared import settings


def worker_processes(emulator_pgid: int) -> list[int]:
    """Pids of the worker function's execution environments started by our emulator (and no one else's)."""
    wanted = f"AWS_LAMBDA_FUNCTION_NAME={settings.WORKER_FUNCTION}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            if os.getpgid(pid) != emulator_pgid:
                continue
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(pid)
        except (OSError, ProcessLookupError):
            continue  # gone meanwhile, or not ours to read
    return found


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
