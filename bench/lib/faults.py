"""The faults the scenario injects, each an event action: (context) -> note for the report.

They use the same mechanisms as the tests (local/chaos.py): the fault proxy in front of the
emulator's DynamoDB for the store blip, the emulator's worker subprocesses for the kill, and
EventBridge Scheduler at() schedules (bench/lib/crons.py) for the crons due at the herd second.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

BLIP_SECONDS = 5
# How long after a kill a job's wait is still blamed on it: the replacement environment's cold start.
KILL_RECOVERY_SECONDS = 3.0
# How long after their due second the crons' firings arrive: the corrected emulator sweeps its
# schedules just after every whole second (local/ministack_patch.py; ministack alone: up to 10 s).
SCHEDULER_LATENESS_SECONDS = 1.0
# Crons due at the herd second: this many seconds' worth of the base rate, as at() schedules.
CRON_HERD_SECONDS_OF_BASE = 10
CRON_LEAD_SECONDS = 12  # creating the schedules must finish before they are due


def kill_worker(context: Any) -> str:
    """SIGKILL one worker execution environment, mid-batch if one is busy (under load most are)."""
    pids = context.worker_pids()
    if not pids:
        return "no worker process alive to kill"
    victim = random.choice(pids)
    os.kill(victim, signal.SIGKILL)
    return f"SIGKILLed worker pid {victim} (1 of {len(pids)})"


def left_out(fault: str) -> Callable[[Any], str]:
    """An event that does not fire (`make bench ARGS='--without kill'`): reported as not wired, so no
    slow job is blamed on it."""

    def skip(context: Any) -> str:
        raise NotImplementedError(f"left out (--without {fault})")

    return skip


def store_blip(context: Any) -> str:
    context.chaos.blip(BLIP_SECONDS, service="dynamodb", mode="mixed")
    return f"DynamoDB answers throttling/5xx to the functions for {BLIP_SECONDS}s (fault proxy)"


def create_crons_ahead(context: Any, due: datetime) -> None:
    """The herd's schedules, created before the load starts: customers' crons exist long before the
    second they are all due, so creating them is no part of the herd the API serves."""
    count = max(50, int(context.base_rate * CRON_HERD_SECONDS_OF_BASE))
    prefix = f"herd{int(time.time())}"
    herd: dict[str, Any] = {"prefix": prefix, "expected": count, "due_epoch": due.timestamp(), "created": "ahead"}
    herd["created_per_second"] = _rounded(context.create_crons(prefix, count, due))
    context.cron_herd = herd


def _rounded(rate: float | None) -> float | None:
    return None if rate is None else round(rate, 1)


def herd_crons(context: Any) -> str:
    """Schedules all due at one second: those created ahead (create_crons_ahead), else created now in
    the background so the other events keep their times."""
    if context.cron_herd and context.cron_herd.get("created") == "ahead":
        due = datetime.fromtimestamp(context.cron_herd["due_epoch"], UTC)
        return f"{context.cron_herd['expected']} schedules (created before the load) due at {due:%H:%M:%S} UTC"
    count = max(50, int(context.base_rate * CRON_HERD_SECONDS_OF_BASE))
    prefix = f"herd{int(time.time())}"
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=CRON_LEAD_SECONDS)
    herd: dict[str, Any] = {"prefix": prefix, "expected": count, "due_epoch": due.timestamp()}
    context.cron_herd = herd

    def create() -> None:
        try:
            herd["created_per_second"] = _rounded(context.create_crons(prefix, count, due))
        except Exception as error:  # reported in slo.json, not lost with the thread
            herd["error"] = f"{type(error).__name__}: {error}"

    threading.Thread(target=create, daemon=True, name="cron-herd").start()
    return f"{count} schedules due at {due:%H:%M:%S} UTC"
