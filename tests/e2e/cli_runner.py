"""Runs the `corral` CLI as a subprocess against the platform under test (`python -m cli`, the console
script's entry point), with the platform's API and AWS settings in its environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local.platform import Platform

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(platform: Platform, *args: str, api_key: str | None = None, timeout: float = 120) -> Ran:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CORRAL_", "AWS_"))},
        **platform.aws_env,
        "CORRAL_API_URL": platform.api_url,
        "CORRAL_API_KEY": api_key or platform.api_key,
        "CORRAL_ENDPOINT_FILE": str(ROOT / ".corral" / "no-such-endpoint.json"),  # only what the test gives
        "COLUMNS": "200",  # rich tables wide enough for whole ids
    }
    done = subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert "Traceback" not in done.stderr, done.stderr
    return Ran(done.returncode, done.stdout, done.stderr)
