"""Job packages: the customer's, named by the CDK context `corral:jobs` (folders holding a Python package,
comma-separated), and those a profile always deploys (the local profile: local/chaos_jobs, the fault
tests' job types).

Where each runs (docs/decisions/customer-code-fence.md):
- a **customer's** package runs in the jobs function (infra/jobs_function.py): copied into that
  function's code asset under its folder name, its requirements.txt installed into a layer of its own
  that only that function carries. The worker and the API never hold its code;
- a **profile's** package is the platform's own test tooling (`crash` kills the process it runs in,
  the worker, on purpose): it runs in the worker, in the API's and the worker's code asset.

At synth the registry of all of them is loaded the way the functions will load it (in a fresh
interpreter on the code assets and the layers), so a type named like a built-in, a bad option, a
payload schema that is no valid JSON Schema or a missing requirement fails `cdk synth`, not a job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import bundling
from shared.environment import FunctionEnv
from shared.jobs import payload_schemas
from shared.jobs.job_types import DECLARATIONS_FILE

RESERVED_NAMES = ("functions", "shared", "corral_jobs", "client", "infra", "local", "tests", "python")
# Job packages a profile deploys whatever corral:jobs names: the fault tests' types, on the emulator only.
PROFILE_PACKAGES = {"local": ("local/chaos_jobs",)}


@dataclass(frozen=True)
class JobsPackage:
    path: Path
    # The platform's own test tooling a profile deploys (PROFILE_PACKAGES): runs in the worker. False: a
    # customer's package, which runs in the jobs function.
    platform_tooling: bool = False

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def requirements(self) -> Path | None:
        found = self.path / "requirements.txt"
        return found if found.is_file() else None


def from_folder(folder: str, *, platform_tooling: bool = False) -> JobsPackage:
    """One job package's folder (relative to the project root, or absolute), checked."""
    path = Path(folder)
    path = (path if path.is_absolute() else bundling.ROOT / path).resolve()
    if not (path / "__init__.py").is_file():
        raise SystemExit(f"corral:jobs: {path} is not a Python package (no __init__.py)")
    if not path.name.isidentifier() or path.name in RESERVED_NAMES:
        raise SystemExit(
            f"corral:jobs: the package's folder name {path.name!r} must be a Python identifier"
            f" and not one of {', '.join(RESERVED_NAMES)}"
        )
    return JobsPackage(path, platform_tooling)


def from_context(raw: object, profile: str) -> list[JobsPackage]:
    """`-c corral:jobs=path/to/package[,another/package]`, then the packages `profile` always deploys."""
    folders = [folder.strip() for folder in str(raw or "").split(",") if folder.strip()]
    packages = [from_folder(folder) for folder in folders]
    packages += [from_folder(folder, platform_tooling=True) for folder in PROFILE_PACKAGES.get(profile, ())]
    names = [package.name for package in packages]
    if len(set(names)) != len(names):
        raise SystemExit(f"corral:jobs: two job packages share a folder name ({', '.join(names)})")
    return packages


_DECLARE = "import json; from shared.jobs import job_types; print(json.dumps(job_types.declarations()))"


def registry(
    code_dirs: Sequence[Path], layer_dirs: Sequence[Path], packages: Sequence[JobsPackage]
) -> list[dict[str, Any]]:
    """The job types the deployed functions will know, loaded from their code assets and layers.

    `code_dirs`: the API's and the worker's asset first, then the jobs function's (the customer's
    packages), so one registry holds every type and a name two packages share fails here. The
    declarations are written into the first (shared/jobs/job_types.py `declared`): the API accepts jobs
    against them, payload schemas included, and the worker knows a customer's type from them, neither
    importing the types' code.
    """
    path = [*(str(code_dir) for code_dir in code_dirs), *(str(layer / "python") for layer in layer_dirs)]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(path),
        "PYTHONNOUSERSITE": "1",
        **FunctionEnv(jobs_package=environment_value(packages)).as_environment(),
    }
    result = subprocess.run(
        [sys.executable, "-S", "-B", "-c", _DECLARE], env=env, capture_output=True, text=True, check=False, timeout=120
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        source = (
            f"the job packages {', '.join(str(p.path) for p in packages)}" if packages else "the built-in job types"
        )
        raise SystemExit(f"corral:jobs: loading {source} failed: {last}")
    declarations = json.loads(result.stdout)
    check_payload_schemas(declarations)
    (code_dirs[0] / DECLARATIONS_FILE).write_text(json.dumps(declarations, indent=1))
    return declarations


def check_payload_schemas(declarations: Sequence[dict[str, Any]]) -> None:
    """Every declared payload schema compiles as the API will compile it, or the synth stops naming the type."""
    for declaration in declarations:
        schema = declaration.get("payload_schema")
        if schema is not None and (problem := payload_schemas.problem_with(schema)) is not None:
            raise SystemExit(
                f"corral:jobs: job type {declaration['name']!r}: payload_schema is not a usable JSON Schema: {problem}"
            )


def environment_value(packages: Sequence[JobsPackage]) -> str:
    """`FunctionEnv.jobs_package`: the packages' import names, comma-separated (shared/jobs/job_types.py `load`)."""
    return ",".join(package.name for package in packages)


def customers(packages: Sequence[JobsPackage]) -> list[JobsPackage]:
    """The customer's packages: what the jobs function holds and runs."""
    return [package for package in packages if not package.platform_tooling]


def platform_tooling(packages: Sequence[JobsPackage]) -> list[JobsPackage]:
    """The profile's test tooling: what the worker holds and runs beside the built-ins."""
    return [package for package in packages if package.platform_tooling]
