"""The TypeScript SDK (client-ts/) inside `make test`: its own unit tests (node --test against a stub
server), and its generated types against the OpenAPI document the API serves now."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLIENT_TS = Path(__file__).resolve().parents[2] / "client-ts"
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node (the CDK's)")


@pytest.fixture(scope="module")
def built() -> Path:
    """client-ts installed and built, as `make install` leaves it."""
    if not (CLIENT_TS / "node_modules" / ".bin" / "tsc").exists():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=CLIENT_TS, check=True, timeout=300
        )
    subprocess.run(["npm", "run", "--silent", "build"], cwd=CLIENT_TS, check=True, timeout=300)
    return CLIENT_TS


def test_the_sdks_unit_tests_pass(built):
    ran = subprocess.run(["node", "--test", "test/"], cwd=built, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "# fail 0" in ran.stdout


def test_the_generated_types_are_those_of_the_document_the_api_serves(built, tmp_path):
    document, generated = tmp_path / "openapi.json", tmp_path / "schema.ts"
    subprocess.run(
        [sys.executable, str(built / "scripts" / "served_openapi.py"), str(document)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    subprocess.run(
        [str(built / "node_modules" / ".bin" / "openapi-typescript"), str(document), "--output", str(generated)],
        check=True,
        capture_output=True,
        timeout=120,
    )

    # Stale after an API change: regenerate (client-ts/README.md says how).
    assert generated.read_text() == (built / "src" / "schema.ts").read_text()
