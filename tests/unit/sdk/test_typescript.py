"""The TypeScript SDK (client-ts/) inside `make test`: its own unit tests (node --test against a stub
server), and its built types against the OpenAPI document the API's handler serves now."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.client_ts import built_client_ts, types_of

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node (the CDK's)")


@pytest.fixture(scope="module")
def built() -> Path:
    return built_client_ts()


def test_the_sdks_unit_tests_pass(built):
    ran = subprocess.run(["node", "--test", "test/"], cwd=built, capture_output=True, text=True, timeout=300)

    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert "# fail 0" in ran.stdout and "# pass 0" not in ran.stdout


def test_the_built_types_are_those_of_the_document_the_api_serves(built, tmp_path):
    served = types_of(None, tmp_path / "schema.ts")

    # Differs after an API change the build has not seen: `make install` (or `npm run build` in client-ts).
    assert served == (built / "src" / "schema.ts").read_text()
