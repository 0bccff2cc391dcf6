"""Where job types come from, and how the worker, the jobs function and the API find one.

Where types come from, in order (`load()`):
1. `shared.jobs.builtin_jobs` (echo, sleep, fail) and every module in the `shared.targets`
   package (http, lambda): the platform's own, registered with `@builtin_job_type` (`load_builtins()`);
2. the job packages this function imports, named by FunctionEnv.jobs_package (comma-separated), with
   every module in each imported (`load_packages()`). A name already taken is an error, raised where
   the stack is synthesized (infra/jobs_package.py), so it never reaches a deploy.

Which function imports which package (docs/decisions/customer-code-fence.md):
- the **jobs function** imports the customer's packages (CDK context `corral:jobs`) and nothing else
  (`load_packages()`, functions/jobs/handler.py);
- the **worker** imports the built-ins and the local profile's test tooling (local/chaos_jobs), never
  a customer's package. A customer's type is known to it by its declaration only: `lookup` answers it
  marked `in_jobs_function`, and the worker runs its jobs by invoking the jobs function
  (shared/worker/run/fence.py). A type whose code is loaded in the process (a unit test's) runs there;
- the **API** imports no package: it accepts a job with `declared(name)`, which reads the registry's
  declarations (names, limits, payload schemas, where each built-in's validator and tenant check
  lives), written at synth into the code asset as job_types.json (infra/jobs_package.py), and imports
  a built-in's checker only when a job of its type is enqueued. Without that file (tests, a checkout)
  it reads the types this process has registered, after the built-ins, and loads no package.

The decorator and what it records live in shared/jobs/registry.py; their names are importable from
here too. Customers import the public surface from `corral_jobs`, not from here.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from shared import environment, settings
from shared.errors import InvalidRequest, PayloadTooLarge
from shared.flow.priority import Priority
from shared.jobs import payload_schemas, payloads
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
from shared.model.spec import JobSpec

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
    "load_packages",
    "lookup",
    "names",
    "registered",
]

_loaded = False  # the built-ins and this function's packages (the worker's registry)
_builtins_loaded = False
_packages_loaded = False


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

    for module in (*_submodules("shared.targets"), "shared.waits.events"):
        importlib.import_module(module)


def load_packages() -> None:
    """Import every module of the job packages FunctionEnv.jobs_package names (once per process).

    The jobs function's registry: the customer's packages, without the built-ins, which run on the worker.
    """
    global _packages_loaded
    if _packages_loaded:
        return
    _packages_loaded = True
    packages = environment.current().jobs_package
    for package in (name.strip() for name in packages.split(",") if name.strip()):
        for module in [package, *_submodules(package)]:
            importlib.import_module(module)


def load() -> None:
    """Import every module that registers job types this function runs (once per process): the
    built-ins, then its job packages. The worker's and the synth's; the API never calls it."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    load_builtins()
    load_packages()


def lookup(name: str) -> JobType | None:
    """The worker's view of a type: registered in this process (its code runs here), else a customer's
    type declared at synth (its code runs in the jobs function), else unknown."""
    load()
    return _REGISTRY.get(name) or _in_jobs_function(name)


def registered(name: str) -> JobType | None:
    """A type registered in this process, loading nothing (the jobs function loaded its packages at start)."""
    return _REGISTRY.get(name)


def _in_jobs_function(name: str) -> JobType | None:
    """A customer's type as the worker knows it: its declaration, marked to run in the jobs function."""
    table = _declared_at_synth()
    found = table.get(name) if table is not None else None
    if found is None or found.builtin:
        return None
    return replace(found, in_jobs_function=True)


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
    raise RuntimeError("a declared job type's code runs where it is loaded: the worker, or the jobs function")


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

    A customer's `validate` is never among them (its declaration names none; it runs with the type's code).
    """
    builtin = bool(entry["builtin"])
    options = {key: entry[key] for key in entry if key not in ("validator", "tenant_check", "builtin", "name")}
    # A per-job rule (`exclusive=<function>`) is the type's code, which only the jobs function holds:
    # the declaration says "per job", and every job of the type then waits for the claim (the safe side).
    options["exclusive"] = entry.get("exclusive") is not False
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
    if found is None:
        return None
    held = _declared_here.get(name)
    if held is None or held[0] is not found:  # made once per registered type (it is built on every enqueue's path)
        held = _declared_here[name] = (found, _as_declared(found.declaration()))
    return held[1]


# name -> (the registered type, its declared view): without the declarations file, the view of what this process
# registered, kept while that registration stands.
_declared_here: dict[str, tuple[JobType, JobType]] = {}


def priority_of(job_type: str, own: Any = None, field: str = "priority") -> Priority:
    """A job's lane where no enqueue reads its options (a schedule's runs, a durable job's children): its own
    `priority` if given (InvalidRequest naming `field` if it is not a level), else its type's default, else
    default. The enqueue reads it with the other flow options (shared/flow/options.py)."""
    if own is not None:
        return Priority.parse(own, field)
    found = declared(job_type)
    defaults = found.flow if found is not None else None
    return Priority.of((defaults or {}).get("priority"))


def declared_names() -> list[str]:
    table = _declared_at_synth()
    return sorted(table if table is not None else _registered_here())


# What every job must satisfy, however it is enqueued: by the API (shared/jobs/enqueue.py), a schedule, or a
# durable job's worker sending its children (shared/worker/run/children.py, which must not load the enqueue).


def check_job(spec: JobSpec, *, tenant: str, field_prefix: str = "", scheduler_input: bool = False) -> None:
    """What every job must satisfy, enqueued now or by a schedule later.

    The payload is checked against its type's payload schema, and by a built-in type's own validator
    and tenant check; a customer's `validate` runs with its code instead, in the jobs function
    (shared/execution/fenced_job.py).
    `tenant`: whose job it is; a type with a tenant check (a `lambda` job's allow-list) asks whether
    this tenant may submit the payload.
    `field_prefix`: where the spec sits in the request, for the field an InvalidRequest names ("job.").
    `scheduler_input`: the job travels as an EventBridge Scheduler target Input (a schedule's
    firings, a job due beyond SQS's longest delay), where Scheduler would rewrite its keywords.
    A max_attempts of None (the job type's default) is always valid.
    """
    found = declared(spec.type)
    if found is None:
        known = ", ".join(declared_names())
        raise InvalidRequest(f"{field_prefix}type", f"unknown job type {spec.type!r}; known types: {known}")
    field = f"{field_prefix}payload"
    nesting = payloads.depth(spec.payload)
    if nesting > settings.MAX_PAYLOAD_DEPTH:
        raise InvalidRequest(field, f"nests {nesting} levels deep; the limit is {settings.MAX_PAYLOAD_DEPTH}")
    try:
        serialised = json.dumps(spec.payload, separators=(",", ":"), allow_nan=False)
    except ValueError as error:
        where = payloads.non_finite_number(spec.payload, field) or field
        raise InvalidRequest(where, "NaN and Infinity are not JSON numbers") from error
    size = len(serialised.encode())
    if size > settings.MAX_PAYLOAD_BYTES:
        raise PayloadTooLarge(field, f"{size} bytes is over the limit of {settings.MAX_PAYLOAD_BYTES} bytes")
    if scheduler_input and payloads.SCHEDULER_KEYWORD in serialised.lower():
        where = payloads.scheduler_keyword(spec.payload, field) or field
        raise InvalidRequest(
            where, f"may not contain {payloads.SCHEDULER_KEYWORD!r} (EventBridge Scheduler would rewrite it)"
        )
    if spec.max_attempts is not None and not 1 <= spec.max_attempts <= settings.MAX_MAX_ATTEMPTS:
        raise InvalidRequest(f"{field_prefix}max_attempts", f"must be between 1 and {settings.MAX_MAX_ATTEMPTS}")
    if spec.timeout_seconds is not None and not 1 <= spec.timeout_seconds <= found.max_timeout_seconds:
        raise InvalidRequest(
            f"{field_prefix}timeout_seconds",
            f"must be between 1 and {found.max_timeout_seconds} (the most a {spec.type!r} job may ask for)",
        )
    try:
        if found.payload_schema is not None:
            payload_schemas.check(found.payload_schema, spec.payload)
        if found.validate is not None:  # a built-in's: declared() carries no customer's
            found.validate(spec.payload)
        if found.check_tenant is not None:
            found.check_tenant(spec.payload, tenant)
    except InvalidPayload as error:
        raise InvalidRequest(f"{field_prefix}{error.field}", error.message) from error


def with_max_attempts(spec: JobSpec) -> JobSpec:
    """The spec with its max_attempts decided: the one it gives, else its job type's default."""
    if spec.max_attempts is not None:
        return spec
    found = declared(spec.type)
    return replace(spec, max_attempts=found.max_attempts if found else settings.DEFAULT_MAX_ATTEMPTS)
