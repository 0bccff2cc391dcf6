"""Every example in examples/ runs against the deployed stack and prints the output its docstring
promises (river's example tests, for Python), and the Node ones (*.mjs, with the TypeScript SDK) the
output their opening comment promises."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client_ts import built_client_ts

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(path.stem for path in (ROOT / "examples").glob("*.py") if not path.stem.startswith("_"))
NODE_EXAMPLES = sorted(path.name for path in (ROOT / "examples").glob("*.mjs"))


def _promised_output(name: str) -> str:
    source = (ROOT / "examples" / f"{name}.py").read_text()
    docstring = source.split('"""')[1]
    return docstring.split("Output:\n", 1)[1].strip()


def _promised_node_output(name: str) -> str:
    comment = [line for line in (ROOT / "examples" / name).read_text().splitlines() if line.startswith("//")]
    lines = [line.removeprefix("//").removeprefix(" ") for line in comment]
    return "\n".join(lines[lines.index("Output:") + 1 :]).strip()


def _environment(deployed) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")},
        "CORRAL_API_URL": deployed.api_url,
        "CORRAL_API_KEY": deployed.api_key,
    }


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_prints_what_it_promises(deployed, name):
    done = subprocess.run(
        [sys.executable, "-m", f"examples.{name}"],
        cwd=ROOT,
        env=_environment(deployed),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == _promised_output(name)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node (the CDK's)")
@pytest.mark.parametrize("name", NODE_EXAMPLES)
def test_node_example_prints_what_it_promises(deployed, name):
    built_client_ts()
    done = subprocess.run(
        ["node", f"examples/{name}"], cwd=ROOT, env=_environment(deployed), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == _promised_node_output(name)
