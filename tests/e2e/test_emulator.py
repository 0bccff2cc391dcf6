"""The embedded stack runs on the corrected emulator (local/ministack_patch.py) and comes up pre-warmed.

Emulator-only: these read the emulator's Lambda processes; against a deployed API they skip.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from local.ministack import worker_pids
from local.ministack_patch import MARKER_ENV, SUPPORTED_VERSION
from local.platform import Platform
from local.prewarm import WARM_WORKER_EVENT, worker_concurrency
from shared import settings


@pytest.fixture
def emulator(deployed: Platform) -> str:
    if not deployed.emulated or deployed.chaos is None:
        pytest.skip("reads the embedded emulator's Lambda processes")
    return deployed.chaos.emulator


def _pids(emulator: str) -> set[int]:
    return set(worker_pids(emulator, settings.WORKER_FUNCTION))


def test_the_stack_comes_up_with_worker_environments_for_its_concurrent_batches(deployed: Platform, emulator: str):
    worker = next(w for w in deployed.warmed if w.function == settings.WORKER_FUNCTION)

    assert worker.wanted == worker_concurrency(deployed.aws_env)
    # All of them on a quiet machine; an init that outlasts its limit on a starved one is not retried forever.
    assert worker.running >= worker.wanted // 2, worker


def test_the_functions_run_under_the_corrected_emulator(emulator: str):
    pid = min(_pids(emulator))
    environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")

    assert f"{MARKER_ENV}={SUPPORTED_VERSION}".encode() in environment


def test_a_handler_error_keeps_the_worker_environment(deployed: Platform, emulator: str):
    before = _pids(emulator)
    lambda_ = deployed.aws("lambda")

    for _ in range(3):
        answer = lambda_.invoke(FunctionName=settings.WORKER_FUNCTION, Payload=json.dumps(WARM_WORKER_EVENT))
        assert answer.get("FunctionError"), "an empty batch should be rejected by the handler"

    assert before <= _pids(emulator), "an environment was killed for its handler's error (ministack's default)"
