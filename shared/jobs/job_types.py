"""Where job types come from, and how the worker and the API find one.

Where types come from, in order (`load()`):
1. `shared.jobs.builtin_jobs` (echo, sleep, fail) and every module in the `shared.targets`
   package (http, lambda): the platform's own, registered with `@builtin_job_type`;
2. the job packages named by FunctionEnv.jobs_package (comma-separated; the stack sets it from the CDK
   context `corral:jobs`, and the local profile adds local/chaos_jobs), with every module in each
   imported. A name already taken is an error, raised where the stack is synthesized
   (infra/jobs_package.py), so it never reaches a deploy.

The API does not import the types' code to accept a job: `declared(name)` reads the registry's
declarations (names, limits, where each payload validator and tenant check lives), written at
synth into the code asset as job_types.json (infra/jobs_package.py), and imports a checker's module
only when a job of its type is enqueued. Without that file (tests, a checkout), it loads the registry.

The decorator and what it records live in shared/jobs/registry.py; their names are importable from
here too. Customers import the public surface from `corral_jobs`, not from here.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from shared import environment
from shared.jobs.registry import (
    NAME_PATTERN,
    Exclusivity,
    InvalidPayload,
    JobContext,
    JobDead,
    JobFailed,
    JobFunction,
    JobTimedOut,
    JobType,
    JobTypeClash,
    PayloadValidator,
    TenantCheck,
    builtin_job_type,
    job_type,
)
from shared.jobs.registry import REGISTRY as _REGISTRY

__all__ = [
    "NAME_PATTERN",
    "Exclusivity",
    "InvalidPayload",
    "JobContext",
    "JobDead",
    "JobFailed",
    "JobFunction",
    "JobTimedOut",
    "JobType",
    "JobTypeClash",
    "PayloadValidator",
    "TenantCheck",
    "builtin_job_type",
    "declarations",
    "declared",
    "declared_names",
    "describe",
    "job_type",
    "load",
    "lookup",
    "names",
]

_loaded = False


def _submodules(package_name: str) -> Iterator[str]:
    package = importlib.import_module(package_name)
    for module in pkgutil.walk_packages(getattr(package, "__path__", []), prefix=f"{package_name}."):
        yield module.name


def load() -> None:
    """Import every module that registers job types (once per process)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from shared.jobs import builtin_jobs  # noqa: F401 - its types register as it is imported

    for module in _submodules("shared.targets"):
        importlib.import_module(module)
    customer = environment.current().jobs_package
    for package in (name.strip() for name in customer.split(",") if name.strip()):
        for module in [package, *_submodules(package)]:
            importlib.import_module(module)


def lookup(name: str) -> JobType | None:
    load()
    return _REGISTRY.get(name)


def names() -> list[str]:
    load()
    return sorted(_REGISTRY)


def describe() -> list[dict[str, Any]]:
    """The registry as data: what `corral:jobs` deploys, checked at synth."""
    return [found.describe() for name in names() if (found := lookup(name))]


DECLARATIONS_FILE = "job_types.json"  # beside the packages, at the root of the functions' code asset
declarations_path = Path(__file__).resolve().parents[2] / DECLARATIONS_FILE


def declarations() -> list[dict[str, Any]]:
    """Every registered type's declaration."""
    load()
    return [_REGISTRY[name].declaration() for name in sorted(_REGISTRY)]


def _not_loaded(payload: Any, context: JobContext) -> Any:
    raise RuntimeError("a declared job type runs only on a worker, which loads the registry")


def _lazy(reference: str) -> Callable[..., None]:
    """The checker `module:qualname` names (a validator, a tenant check), imported when first called."""
    module_name, _, qualname = reference.partition(":")

    def check(*arguments: Any) -> None:
        target: Any = importlib.import_module(module_name)  # its types register as it is imported
        for part in qualname.split("."):
            target = getattr(target, part)
        target(*arguments)

    return check


@cache
def _declared() -> dict[str, JobType] | None:
    if not declarations_path.is_file():
        return None
    found = {}
    for entry in json.loads(declarations_path.read_text()):
        options = {key: entry[key] for key in entry if key not in ("validator", "tenant_check", "builtin", "name")}
        found[entry["name"]] = JobType(
            name=entry["name"],
            run=_not_loaded,
            validate=_lazy(entry["validator"]) if entry.get("validator") else None,
            check_tenant=_lazy(entry["tenant_check"]) if entry.get("tenant_check") else None,
            builtin=entry["builtin"],
            **options,
        )
    return found


def declared(name: str) -> JobType | None:
    """A type as the API needs it to accept a job (limits, validator), without importing its code if it can."""
    table = None if _loaded else _declared()
    if table is None:
        return lookup(name)
    return table.get(name)


def declared_names() -> list[str]:
    table = None if _loaded else _declared()
    if table is None:
        return names()
    return sorted(table)
