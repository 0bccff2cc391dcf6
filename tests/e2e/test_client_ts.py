"""The TypeScript SDK against the deployed stack: its example enqueues, waits, lists and cancels."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from local.deploy import create_api_key

CLIENT_TS = Path(__file__).resolve().parents[2] / "client-ts"
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node (the CDK's)")


def test_the_typescript_sdk_enqueues_waits_lists_and_cancels(deployed):
    if not (CLIENT_TS / "dist" / "index.js").exists():
        subprocess.run(["npm", "run", "--silent", "build"], cwd=CLIENT_TS, check=True, timeout=300)
    key = create_api_key(deployed.aws_env, f"ts-{uuid.uuid4().hex[:8]}", "client-ts e2e")
    env = {**os.environ, "CORRAL_API_URL": deployed.api_url, "CORRAL_API_KEY": key}

    ran = subprocess.run(
        ["node", str(CLIENT_TS / "examples" / "enqueue_and_wait.mjs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert ran.returncode == 0, ran.stderr[-3000:]
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    assert seen["status"] == "succeeded" and seen["result"] == {"hello": "from TypeScript"}
    assert seen["listed"] is True and seen["cancelled"] == "cancelled" and seen["unknown"] == "not found"
