"""A durable job whose steps leave a trace outside corral: each step appends `start <step> <attempt>` to a ledger
file when it begins and `end <step> <attempt>` when it is done, as a call to a partner's API would leave one on
the partner's side. The end-to-end suite reads the ledger to count how often each step really ran while it kills
the jobs function mid-step or blips the store (tests/e2e/test_durable_faults.py); on the embedded stack the jobs
function runs on the test's machine, so the file is the test's to read.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from corral_jobs import JobContext, job_type

LEDGER_STEPS = {
    "type": "object",
    "properties": {
        "ledger": {"type": "string", "minLength": 1, "maxLength": 512},
        "seconds": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 4}, "maxItems": 20},
    },
    "required": ["ledger", "seconds"],
}


@job_type("ledger_steps", timeout_seconds=5, max_attempts=5, payload_schema=LEDGER_STEPS)
def ledger_steps(payload: dict[str, Any], context: JobContext) -> list[int]:
    """One step per entry of `seconds`, each taking that long: the attempt each step ran on, in order."""
    ledger = Path(payload["ledger"])
    return [
        context.step(f"step-{n}", _traced, ledger, n, seconds, context.attempt)
        for n, seconds in enumerate(payload["seconds"])
    ]


def _traced(ledger: Path, n: int, seconds: float, attempt: int) -> int:
    _append(ledger, f"start {n} {attempt}")
    time.sleep(seconds)
    _append(ledger, f"end {n} {attempt}")
    return attempt


def _append(ledger: Path, line: str) -> None:
    with ledger.open("a") as file:  # one short write in append mode: lines of two runs never interleave
        file.write(line + "\n")
