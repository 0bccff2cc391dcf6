"""The customer's job package, named by the CDK context `corral:jobs` (a folder holding a Python package).

Deployed with the platform: copied into the functions' code asset under its folder name, its
requirements.txt installed into a layer of its own, and its registry loaded at synth the way a
function will load it (in a fresh interpreter on the code asset and the layers), so a type named
like a built-in, a bad option or a missing requirement fails `cdk synth`, not a job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import bundling
from shared.environment import FunctionEnv
from shared.jobs.job_types import DECLARATIONS_FILE

RESERVED_NAMES = ("functions", "shared", "corral_jobs", "client", "infra", "local", "tests", "python")


@dataclass(frozen=True)
class JobsPackage:
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def requirements(self) -> Path | None:
        found = self.path / "requirements.txt"
        return found if found.is_file() else None


def from_context(raw: object) -> JobsPackage | None:
    """`-c corral:jobs=path/to/package` (relative to the project root), or None."""
    if not raw:
        return None
    path = Path(str(raw))
    path = (path if path.is_absolute() else bundling.ROOT / path).resolve()
    if not (path / "__init__.py").is_file():
        raise SystemExit(f"corral:jobs: {path} is not a Python package (no __init__.py)")
    if not path.name.isidentifier() or path.name in RESERVED_NAMES:
        raise SystemExit(
            f"corral:jobs: the package's folder name {path.name!r} must be a Python identifier"
            f" and not one of {', '.join(RESERVED_NAMES)}"
        )
    return JobsPackage(path)


_DECLARE = "import json; from shared.jobs import job_types; print(json.dumps(job_types.declarations()))"


def registry(code_dir: Path, layer_dirs: list[Path], package: JobsPackage | None) -> list[dict[str, Any]]:
    """The job types the deployed functions will know, loaded from the bundle exactly as they will load it.

    Their declarations are written into the bundle (shared/jobs/job_types.py `declared`): the API accepts
    jobs against them without importing the types' code.
    """
    path = [str(code_dir), *(str(layer / "python") for layer in layer_dirs)]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(path),
        "PYTHONNOUSERSITE": "1",
        **FunctionEnv(chaos_job_types=True, jobs_package=package.name if package else "").as_environment(),
    }
    result = subprocess.run(
        [sys.executable, "-S", "-B", "-c", _DECLARE], env=env, capture_output=True, text=True, check=False, timeout=120
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        source = f"the job package {package.path}" if package else "the built-in job types"
        raise SystemExit(f"corral:jobs: loading {source} failed: {last}")
    declarations = json.loads(result.stdout)
    (code_dir / DECLARATIONS_FILE).write_text(json.dumps(declarations, indent=1))
    return declarations
