"""The whole suite, as `make test` runs it (`python -m tests.suite [pytest arguments]`).

The end-to-end tests spend most of their time waiting on the embedded stack (a job's run, a schedule's
second), and the unit tests are the interpreter's work: on a 2-core machine the two run side by side in
about the time of the longer one, instead of their sum. The infra tests bundle the functions in the same
folder as the end-to-end stack's deploy, so they run after it. With arguments, it is one plain pytest run
of what they name (`make test ARGS=tests/unit/worker`).

Each part's output is printed whole, one after the other; the exit code is the first failing part's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# CI gives the whole suite 90 minutes; an end-to-end run that outlives this is stopped, and fails.
E2E_LIMIT_SECONDS = 60 * 60


def _pytest(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *arguments]


def _run_side_by_side() -> int:
    with tempfile.TemporaryFile(mode="w+") as e2e_output:
        print("tests/e2e runs beside tests/unit; its output follows the unit tests'.", flush=True)
        e2e = subprocess.Popen(
            _pytest("tests/e2e"), cwd=ROOT, stdout=e2e_output, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            unit = subprocess.call(_pytest("tests/unit"), cwd=ROOT)
            try:
                e2e_code = e2e.wait(timeout=E2E_LIMIT_SECONDS)
            except subprocess.TimeoutExpired:
                print(f"tests/e2e ran past {E2E_LIMIT_SECONDS} s: stopped", flush=True)
                os.killpg(e2e.pid, signal.SIGTERM)
                e2e_code = e2e.wait(timeout=60)
        finally:
            if e2e.poll() is None:  # interrupted: what it started stops with it
                os.killpg(e2e.pid, signal.SIGTERM)
                e2e.wait(timeout=60)
        e2e_output.seek(0)
        print(f"\n===== tests/e2e =====\n{e2e_output.read()}", flush=True)
    infra = subprocess.call(_pytest("tests/infra"), cwd=ROOT)
    failed = [code for code in (unit, e2e_code, infra) if code != 0]
    return failed[0] if failed else 0


def main(argv: list[str]) -> int:
    if argv:
        return subprocess.call(_pytest(*argv), cwd=ROOT)
    return _run_side_by_side()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
