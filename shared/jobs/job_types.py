"""Where job types come from, and how the worker and the API find one.

Where types come from, in order (`load()`):
1. `shared.jobs.builtin_jobs` (echo, sleep, fail) and every module in the `shared.targets`
   package (http, lambda): the platform's own, registered with `@builtin_job_type` (`load_builtins()`);
2. the job packages named by FunctionEnv.jobs_package (comma-separated; the stack sets it from the CDK
   context `corral:jobs`, and the local profile adds local/chaos_jobs), with every module in each
   imported. A name already taken is an error, raised where the stack is synthesized
   (infra/jobs_package.py), so it never reaches a deploy.

The worker loads them all. The API never imports a customer's module: it holds the rights to read
API keys, which a jobs package must not have. It accepts a job with `declared(name)`, which reads
the registry's declarations (names, limits, payload schemas, where each built-in's validator and
tenant check lives), written at synth into the code asset as job_types.json (infra/jobs_package.py),
and imports a built-in's checker only when a job of its type is enqueued. Without that file (tests,
a checkout) it reads the types this process has registered, after the built-ins, and loads no package.

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
    FIRST_PARTY_PACKAGE,
    NAME_PATTERN,
    ConcurrencyKey,
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
    "ConcurrencyKey",
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
    "load_builtins",
    "lookup",
    "names",
]

_loaded = False  # every type, the customer's too (the worker's registry)
_builtins_loaded = False


def _submodules(package_name: str) -> Iterator[str]:
    package = importlib.import_module(package_name)
    for module in pkgutil.walk_packages(getattr(package, "__path__", []), prefix=f"{package_name}."):
        yield module.name


def load_builtins() -> None:
    """Import the platform's own job types (once per process): no customer module."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    from shared.jobs import builtin_jobs  # noqa: F401 - its types register as it is imported

    for module in _submodules("shared.targets"):
        importlib.import_module(module)


def load() -> None:
    """Import every module that registers job types, the job packages' too (once per process).

    The worker's: the API never calls it (see the module's docstring).
    """
    global _loaded
    if _loaded:
        return
    _loaded = True
    load_builtins()
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


def _first_party(reference: str) -> Callable[..., None]:
    """The built-in checker `module:qualname` names (a validator, a tenant check), imported when first called.

    Only the platform's own modules: the API must never import a customer's.
    """
    module_name, _, qualname = reference.partition(":")
    if module_name.partition(".")[0] != FIRST_PARTY_PACKAGE:
        raise RuntimeError(f"the API imports no checker outside the platform's code: {reference!r}")

    def check(*arguments: Any) -> None:
        target: Any = importlib.import_module(module_name)  # its types register as it is imported
        for part in qualname.split("."):
            target = getattr(target, part)
        target(*arguments)

    return check


def _as_declared(entry: dict[str, Any]) -> JobType:
    """A type as its declaration describes it: limits and payload schema, and a built-in's checkers.

    A customer's `validate` is never among them (its declaration names none; it runs on the worker).
    """
    builtin = bool(entry["builtin"])
    # The concurrency key is a function of the payload, the type's code: not in a declaration, and not
    # the API's business (the worker, which loads the type, applies it).
    skipped = ("validator", "tenant_check", "builtin", "name", "concurrency_key")
    options = {key: entry[key] for key in entry if key not in skipped}
    validator = entry.get("validator") if builtin else None
    tenant_check = entry.get("tenant_check") if builtin else None
    return JobType(
        name=entry["name"],
        run=_not_loaded,
        validate=_first_party(validator) if validator else None,
        check_tenant=_first_party(tenant_check) if tenant_check else None,
        builtin=builtin,
        **options,
    )


@cache
def _declared_at_synth() -> dict[str, JobType] | None:
    if not declarations_path.is_file():
        return None
    return {entry["name"]: _as_declared(entry) for entry in json.loads(declarations_path.read_text())}


def _registered_here() -> dict[str, JobType]:
    """Without the declarations file: the built-ins and whatever this process registered itself."""
    load_builtins()
    return _REGISTRY


def declared(name: str) -> JobType | None:
    """A type as the API needs it to accept a job (limits, payload schema, a built-in's checkers),
    without importing any customer's module."""
    table = _declared_at_synth()
    if table is not None:
        return table.get(name)
    found = _registered_here().get(name)
    return _as_declared(found.declaration()) if found else None


def declared_names() -> list[str]:
    table = _declared_at_synth()
    return sorted(table if table is not None else _registered_here())
