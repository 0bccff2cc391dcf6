"""The TypeScript SDK (client-ts/) against the deployed stack: a Node script drives it through every kind of
call, with a tenant of its own; and its generated types are those of the document the stack serves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from local.deploy import create_api_key
from tests.client_ts import built_client_ts, types_of

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node (the CDK's)")


@pytest.fixture(scope="module")
def built() -> Path:
    return built_client_ts()


def test_the_sdk_enqueues_waits_lists_cancels_retries_and_schedules(deployed, built):
    deployed.require_aws()  # the script's tenant, so its listing and counts are its own, is written into the table
    key = create_api_key(deployed.aws_env, f"ts-{uuid.uuid4().hex[:8]}", "client-ts e2e")
    env = {**os.environ, "CORRAL_API_URL": deployed.api_url, "CORRAL_API_KEY": key}

    ran = subprocess.run(
        ["node", str(built / "e2e" / "against_stack.mjs")], env=env, capture_output=True, text=True, timeout=600
    )

    assert ran.returncode == 0, ran.stderr[-3000:]
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    assert seen["waited"] == {"status": "succeeded", "result": {"hello": "from TypeScript"}}
    assert seen["bulk"] == ["queued", "InvalidRequest jobs[1].max_attempts", "queued"]
    assert seen["listed"]["all"] is True and seen["listed"]["pages"] >= 2  # 3 echo jobs, 2 a page
    assert seen["listedFirstTwo"] == 2
    assert (seen["cancelled"], seen["cancelledAgain"]) == ("cancelled", "cancelled")
    assert seen["retried"] == {
        "before": "dead",
        "answer": "queued",
        "after": "succeeded",
        "result": {"succeeded_on_attempt": 2},
    }
    assert seen["errors"] == {"unknown": 404, "invalid": "max_attempts", "finished": "conflict"}
    assert seen["statsSucceeded"] >= 4  # the first job, two bulk ones, the retried one
    assert seen["schedule"] == {"run": "succeeded", "listed": True, "paused": "paused", "afterDelete": "not found"}
    assert seen["batch"] == {"status": "succeeded", "jobs": 2}


def test_the_built_types_are_those_of_the_document_the_stack_serves(deployed, built, tmp_path):
    served = types_of(f"{deployed.api_url}/v1/openapi.json", tmp_path / "schema.ts")

    # Differs when the stack serves another document than the code builds the types from (an API change
    # the build has not seen: `make install`, or `npm run build` in client-ts).
    assert served == (built / "src" / "schema.ts").read_text()
