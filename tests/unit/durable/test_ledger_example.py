"""The ledger example (examples/jobs/ledger.py), which the end-to-end faults test reads, played through the jobs
function's side and the store on moto: its ledger counts each step's runs, and a jobs function killed during a
step's invoke leaves that step, and only it, to run again on the next attempt."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.unit.durable_harness import DurableJob, example_type


@pytest.fixture
def ledger_module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return example_type(monkeypatch, "examples.jobs.ledger", "ledger_steps")


def test_a_step_whose_invoke_was_killed_runs_again_and_the_ledger_shows_it(aws, ledger_module, tmp_path: Path):
    ledger = tmp_path / "ledger.txt"
    job = DurableJob("ledger_steps", {"ledger": str(ledger), "seconds": [0, 0, 0]}, job_id="jt-ledger")

    killed = job.attempt_once(killed_during=2)  # step-1's invoke: its answer never arrives
    job = job.fresh()
    job.attempt = 2
    done = job.attempt_once()

    assert killed.failure is not None and done.result == [1, 2, 2]
    assert ledger.read_text().split("\n")[:-1] == [
        "start 0 1",
        "end 0 1",
        "start 1 1",  # ran, but its result was lost with the killed invoke
        "end 1 1",
        "start 1 2",
        "end 1 2",
        "start 2 2",
        "end 2 2",
    ]
