"""The registry of job types: the platform's built-ins and targets, and the customer's own package.

A job type is a function registered with `@job_type(name, ...)`; it takes the payload and a
JobContext and returns a JSON-able result. Raising fails the attempt: it is retried with the
type's backoff up to max_attempts; `JobDead` ends the job at once; `JobFailed(retry_after=s)`
chooses when the retry comes.

Where types come from, in order (`load()`):
1. `shared.jobs.builtin_jobs` (echo, sleep, fail, crash) and every module in the `shared.targets`
   package (http, lambda): the platform's own, marked builtin;
2. the customer's package named by CORRAL_JOBS_PACKAGE (the stack sets it from the CDK context
   `corral:jobs`), with every module in it imported. A name already taken is an error, raised
   where the stack is synthesized (infra/jobs_package.py), so it never reaches a deploy.

The API does not import the types' code to accept a job: `declared(name)` reads the registry's
declarations (names, limits, where each payload validator lives), written at synth into the code
asset as job_types.json (infra/functions.py), and imports a validator's module only when a job of
its type is enqueued. Without that file (tests, a checkout), it loads the registry.

Customers import the public surface from `corral_jobs`, not from here.
"""

from __future__ import annotations

import importlib
import json
import logging
import pkgutil
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from shared import environment, settings
from shared.errors import CorralError

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")


class JobFailed(Exception):
    """A job's own, expected failure: retried (after `retry_after` seconds if given), its message the error."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class JobDead(Exception):
    """A failure no retry can fix (a 4xx answer, a refused target): the job is dead at once."""


class JobTimedOut(JobFailed):
    """The attempt ran past the job's timeout (raised into the job by shared/worker/deadline.py)."""


class InvalidPayload(ValueError):
    """Raised by a type's `validate` at enqueue: the job is refused with a 422 naming `field`."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field  # relative to the job, e.g. "payload.url"
        self.message = message


class JobTypeClash(CorralError):
    """Two registrations of one name (a customer type named like a built-in, or twice)."""


@dataclass(frozen=True)
class JobContext:
    """What a job function knows about the attempt it runs in."""

    job_id: str
    attempt: int
    max_attempts: int
    deadline: float  # epoch seconds: the attempt is stopped (JobTimedOut) at this time
    logger: logging.LoggerAdapter = field(repr=False, compare=False)  # type: ignore[type-arg]
    tenant: str = ""  # whose job it is (a target signs its requests with the tenant's secrets)

    @property
    def idempotency_key(self) -> str:
        """Stable across attempts and duplicate deliveries: key external side effects on it."""
        return self.job_id

    @property
    def last_attempt(self) -> bool:
        return self.attempt >= self.max_attempts

    def seconds_left(self) -> float:
        return max(0.0, self.deadline - time.time())


JobFunction = Callable[[Any, JobContext], Any]
PayloadValidator = Callable[[Any], None]
# Whether a job must hold the store's claim to run: a flag for the whole type, or a function of the payload.
Exclusivity = bool | Callable[[Any], bool]


@dataclass(frozen=True)
class JobType:
    name: str
    run: JobFunction
    timeout_seconds: int = settings.DEFAULT_JOB_TIMEOUT_SECONDS  # a job's timeout unless it gives its own
    max_timeout_seconds: int = settings.MAX_JOB_TIMEOUT_SECONDS  # the most a job may ask for
    max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS  # a job's attempts unless it gives its own
    backoff_base_seconds: float = settings.RETRY_BACKOFF_BASE_SECONDS
    backoff_cap_seconds: float = settings.RETRY_BACKOFF_CAP_SECONDS
    validate: PayloadValidator | None = None  # run at enqueue (the API); raise InvalidPayload
    chaos: bool = False  # only deployed where fault injection is allowed (the local profile)
    builtin: bool = False
    # True: a job runs only under the store's claim, so while the store fails it waits (handed back).
    # False: a first delivery runs without the claim during a store outage (docs/architecture.md
    # "Store blips: jobs keep starting"); a duplicate delivery in that window may run it twice.
    exclusive: Exclusivity = False

    def is_exclusive(self, payload: Any) -> bool:
        """Whether this job must hold the claim to run. A payload the check cannot read: exclusive."""
        if not callable(self.exclusive):
            return bool(self.exclusive)
        try:
            return bool(self.exclusive(payload))
        except Exception:  # the type's own check on a payload it did not expect: the safe answer
            return True

    def timeout_for(self, requested: int | None) -> int:
        """The timeout of one job: its own if it gave one (checked at enqueue), else the type's."""
        return min(requested or self.timeout_seconds, self.max_timeout_seconds)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "timeout_seconds": self.timeout_seconds,
            "max_timeout_seconds": self.max_timeout_seconds,
            "max_attempts": self.max_attempts,
            "backoff_base_seconds": self.backoff_base_seconds,
            "backoff_cap_seconds": self.backoff_cap_seconds,
            "builtin": self.builtin,
            "exclusive": "per job" if callable(self.exclusive) else bool(self.exclusive),
        }

    def declaration(self) -> dict[str, Any]:
        """What the API needs to accept a job of this type, as data (see `declared`)."""
        validator = f"{self.validate.__module__}:{self.validate.__qualname__}" if self.validate else None
        return {**self.describe(), "chaos": self.chaos, "validator": validator}


_REGISTRY: dict[str, JobType] = {}
_registering_builtins = False
_loaded = False


def job_type(
    name: str,
    *,
    timeout_seconds: int = settings.DEFAULT_JOB_TIMEOUT_SECONDS,
    max_timeout_seconds: int | None = None,
    max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS,
    backoff_base_seconds: float = settings.RETRY_BACKOFF_BASE_SECONDS,
    backoff_cap_seconds: float = settings.RETRY_BACKOFF_CAP_SECONDS,
    validate: PayloadValidator | None = None,
    chaos: bool = False,
    exclusive: Exclusivity = False,
) -> Callable[[JobFunction], JobFunction]:
    """Register a job type. Limits are checked here, so a bad one fails the synth, not a job.

    `exclusive`: True if a job of this type must never run twice at once, even while the store
    fails (it then waits for the store); or a function of the payload deciding it per job.
    """
    ceiling = settings.MAX_JOB_TIMEOUT_SECONDS if max_timeout_seconds is None else max_timeout_seconds
    _check_options(name, timeout_seconds, ceiling, max_attempts, backoff_base_seconds, backoff_cap_seconds)

    def register(function: JobFunction) -> JobFunction:
        if name in _REGISTRY:
            owner = "a built-in type" if _REGISTRY[name].builtin else "another job function"
            raise JobTypeClash(f"job type {name!r} is already {owner}; choose another name")
        _REGISTRY[name] = JobType(
            name=name,
            run=function,
            timeout_seconds=timeout_seconds,
            max_timeout_seconds=ceiling,
            max_attempts=max_attempts,
            backoff_base_seconds=backoff_base_seconds,
            backoff_cap_seconds=backoff_cap_seconds,
            validate=validate,
            chaos=chaos,
            builtin=_registering_builtins,
            exclusive=exclusive,
        )
        return function

    return register


def _check_options(
    name: str, timeout: int, ceiling: int, max_attempts: int, backoff_base: float, backoff_cap: float
) -> None:
    if not NAME_PATTERN.match(name):
        raise ValueError(f"job type name {name!r} must match {NAME_PATTERN.pattern}")
    top = settings.MAX_JOB_TIMEOUT_SECONDS
    if not 1 <= timeout <= ceiling <= top:
        raise ValueError(f"job type {name!r}: need 1 <= timeout_seconds <= max_timeout_seconds <= {top}")
    if not 1 <= max_attempts <= settings.MAX_MAX_ATTEMPTS:
        raise ValueError(f"job type {name!r}: max_attempts must be between 1 and {settings.MAX_MAX_ATTEMPTS}")
    if not 0 < backoff_base <= backoff_cap <= settings.RETRY_BACKOFF_CAP_SECONDS:
        raise ValueError(
            f"job type {name!r}: need 0 < backoff_base_seconds <= backoff_cap_seconds"
            f" <= {settings.RETRY_BACKOFF_CAP_SECONDS}"
        )


def _submodules(package_name: str) -> Iterator[str]:
    package = importlib.import_module(package_name)
    for module in pkgutil.walk_packages(getattr(package, "__path__", []), prefix=f"{package_name}."):
        yield module.name


def load() -> None:
    """Import every module that registers job types (once per process)."""
    global _loaded, _registering_builtins
    if _loaded:
        return
    _loaded = True
    _registering_builtins = True
    try:
        importlib.import_module("shared.jobs.builtin_jobs")
        for module in _submodules("shared.targets"):
            importlib.import_module(module)
    finally:
        _registering_builtins = False
    customer = environment.current().jobs_package
    if customer:
        for module in [customer, *_submodules(customer)]:
            importlib.import_module(module)


def _chaos_enabled() -> bool:
    return environment.current().chaos_job_types


def lookup(name: str) -> JobType | None:
    load()
    found = _REGISTRY.get(name)
    if found is None or (found.chaos and not _chaos_enabled()):
        return None
    return found


def names() -> list[str]:
    load()
    return sorted(name for name in _REGISTRY if lookup(name))


def describe() -> list[dict[str, Any]]:
    """The registry as data: what `corral:jobs` deploys, checked at synth."""
    return [found.describe() for name in names() if (found := lookup(name))]


DECLARATIONS_FILE = "job_types.json"  # beside the packages, at the root of the functions' code asset
declarations_path = Path(__file__).resolve().parents[2] / DECLARATIONS_FILE


def declarations() -> list[dict[str, Any]]:
    """Every registered type's declaration, chaos types included (`declared` filters them as `lookup` does)."""
    load()
    return [_REGISTRY[name].declaration() for name in sorted(_REGISTRY)]


def _not_loaded(payload: Any, context: JobContext) -> Any:
    raise RuntimeError("a declared job type runs only on a worker, which loads the registry")


def _lazy_validator(reference: str) -> PayloadValidator:
    module_name, _, qualname = reference.partition(":")

    def validate(payload: Any) -> None:
        global _registering_builtins
        registering, _registering_builtins = _registering_builtins, module_name.startswith("shared.")
        try:  # its module registers its types as it is imported: built-ins as built-ins, as load() would
            target: Any = importlib.import_module(module_name)
        finally:
            _registering_builtins = registering
        for part in qualname.split("."):
            target = getattr(target, part)
        target(payload)

    return validate


@cache
def _declared() -> dict[str, JobType] | None:
    if not declarations_path.is_file():
        return None
    found = {}
    for entry in json.loads(declarations_path.read_text()):
        options = {key: entry[key] for key in entry if key not in ("validator", "chaos", "builtin", "name")}
        validator = _lazy_validator(entry["validator"]) if entry.get("validator") else None
        found[entry["name"]] = JobType(
            name=entry["name"],
            run=_not_loaded,
            validate=validator,
            chaos=entry["chaos"],
            builtin=entry["builtin"],
            **options,
        )
    return found


def declared(name: str) -> JobType | None:
    """A type as the API needs it to accept a job (limits, validator), without importing its code if it can."""
    table = None if _loaded else _declared()
    if table is None:
        return lookup(name)
    found = table.get(name)
    return None if found is None or (found.chaos and not _chaos_enabled()) else found


def declared_names() -> list[str]:
    table = None if _loaded else _declared()
    if table is None:
        return names()
    return sorted(name for name in table if declared(name))
