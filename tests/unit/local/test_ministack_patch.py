"""The launcher's corrections to the emulator (local/ministack_patch.py), checked against the real ministack.

They replace private internals of one ministack release, so these fail as soon as the pinned or
installed emulator is another version: port the corrections (or drop them) before upgrading.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from local import ministack_patch
from local.ministack import REQUIREMENTS, VENV, ensure_installed

PYTHON = VENV / "bin" / "python"
CHECKS = "tests/emulator/ministack_patch_checks.py"


@pytest.fixture(scope="module")
def emulator_venv() -> Path:
    """The emulator's own venv, installed here if this test runs before anything else needed it."""
    return ensure_installed()


needs_emulator = pytest.mark.usefixtures("emulator_venv")


def _in_emulator_venv(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PYTHON), "-P", *args], capture_output=True, text=True, timeout=timeout, check=False)


def test_the_pinned_emulator_is_the_one_the_corrections_were_written_for():
    assert f"ministack=={ministack_patch.SUPPORTED_VERSION}" in REQUIREMENTS.read_text().split()


@needs_emulator
def test_the_installed_emulator_is_the_one_the_corrections_were_written_for():
    found = _in_emulator_venv("-c", "from importlib.metadata import version; print(version('ministack'))")

    assert found.stdout.strip() == ministack_patch.SUPPORTED_VERSION


@needs_emulator
@pytest.mark.parametrize(
    "check",
    [
        "version_is_enforced",
        "a_handler_error_keeps_the_environment",
        "a_dying_process_ends_its_environment",
        "a_lease_prefers_a_live_environment_and_rewarms_the_dead_one",
        "init_is_bounded",
        "a_failed_batch_lowers_concurrency_instead_of_pausing_the_mapping",
        "a_standard_queue_receives_the_quiet_group_ahead_of_a_backlog",
        "scheduler_fires_at_the_due_second",
        "a_busy_warm_environment_is_awaited_before_a_cold_start",
        "a_cold_start_unpacks_nothing_another_environment_unpacked",
    ],
)
def test_the_correction_holds_in_the_real_runtime(check: str):
    result = _in_emulator_venv(CHECKS, check)

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_patch_imports_nothing_the_emulator_venv_lacks_at_module_level():
    tree = ast.parse(Path(ministack_patch.__file__).read_text())
    modules = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}

    assert all(module.split(".")[0] in sys.stdlib_module_names | {"__future__"} for module in modules), modules
