"""client-ts/ (the TypeScript SDK) for the tests that run it (tests/unit/ and tests/e2e/test_client_ts.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

CLIENT_TS = Path(__file__).resolve().parents[1] / "client-ts"


def built_client_ts() -> Path:
    """client-ts as `make install` leaves it, installed and built (the build generates its types), made so
    when it is not (a test run without `make`)."""
    if not (CLIENT_TS / "node_modules" / ".bin" / "tsc").exists():
        npm_ci = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        subprocess.run(npm_ci, cwd=CLIENT_TS, check=True, timeout=300)
    if not (CLIENT_TS / "dist" / "index.js").exists():
        subprocess.run(["npm", "run", "--silent", "build"], cwd=CLIENT_TS, check=True, timeout=300)
    return CLIENT_TS


def types_of(document_from: str | None, output: Path) -> str:
    """The types client-ts's build generates from the OpenAPI document at `document_from` (a URL), or from
    the API's own handler when None."""
    source = ["--from", document_from] if document_from else []
    generate = ["node", "scripts/generate.mjs", *source, "--output", str(output)]
    subprocess.run(generate, cwd=CLIENT_TS, check=True, capture_output=True, timeout=180)
    return output.read_text()
