"""Every example in examples/ runs against the deployed stack and prints the output its docstring
promises (river's example tests, for Python)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(path.stem for path in (ROOT / "examples").glob("*.py") if not path.stem.startswith("_"))


def _promised_output(name: str) -> str:
    source = (ROOT / "examples" / f"{name}.py").read_text()
    docstring = source.split('"""')[1]
    return docstring.split("Output:\n", 1)[1].strip()


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_prints_what_it_promises(deployed, name):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")},
        "CORRAL_API_URL": deployed.api_url,
        "CORRAL_API_KEY": deployed.api_key,
    }
    done = subprocess.run(
        [sys.executable, "-m", f"examples.{name}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == _promised_output(name)
