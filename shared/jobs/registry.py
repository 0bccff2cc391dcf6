"""Job types and their registry: the `@job_type` decorator, what it records, and what a job function
gets (JobContext) and raises (JobFailed, JobDead; JobTimedOut is raised into it).

A job type is a function registered with `@job_type(name, ...)`; it takes the payload and a
JobContext and returns a JSON-able result. Raising fails the attempt: it is retried with the
type's backoff up to max_attempts; `JobDead` ends the job at once; `JobFailed(retry_after=s)`
chooses when the retry comes. The platform's own types register with `@builtin_job_type`.

Where a type's checks run: its `payload_schema` (a JSON Schema, data) in the API at enqueue
(shared/jobs/payload_schemas.py); a customer's `validate` hook in the jobs function, before the job's code,
because the API never imports a customer's module; a built-in's `validate` and `check_tenant` in the API.

Which modules get imported to register their types, and how a type is found: shared/jobs/job_types.py.
Customers import the public surface from `corral_jobs`, not from here.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from shared import settings
from shared.errors import CorralError, InvalidRequest
from shared.flow import options as flow_options

if TYPE_CHECKING:  # the API imports this module; only the jobs function runs durable steps
    from shared.durable.replay import DurableRun

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
# Where the platform's own code lives: the only modules whose checkers the API imports (a jobs
# package may not be named `shared`: infra/jobs_package.py RESERVED_NAMES).
FIRST_PARTY_PACKAGE = "shared"


class JobFailed(Exception):
    """A job's own, expected failure: retried (after `retry_after` seconds if given), its message the error."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class JobDead(Exception):
    """A failure no retry can fix (a 4xx answer, a refused target): the job is dead at once."""


class JobTimedOut(JobFailed):
    """The attempt ran past the job's timeout (raised into the job by shared/execution/time_limit.py)."""


class InvalidPayload(ValueError):
    """Raised by a type's `validate` (or `check_tenant`): a payload the type refuses, naming `field`.

    From a built-in's check in the API, or the payload schema's, the job is refused with a 422; from a
    customer's `validate`, which runs with the job's code (in the jobs function), the job ends dead without a retry.
    """

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
    # The run's recorded steps, where the worker records them (docs/decisions/durable-jobs.md); None where it
    # does not, and then the durable methods below end the job dead, saying so.
    durable: DurableRun | None = field(default=None, repr=False, compare=False)

    @property
    def idempotency_key(self) -> str:
        """Stable across attempts and duplicate deliveries: key external side effects on it."""
        return self.job_id

    @property
    def last_attempt(self) -> bool:
        return self.attempt >= self.max_attempts

    def seconds_left(self) -> float:
        return max(0.0, self.deadline - time.time())

    # Durable steps (shared/durable/replay.py). Each takes a step id, unique within the job: the same id
    # names the same step on every run of the job's code, which must call its steps in the same order.

    def step(self, step_id: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`function(*args, **kwargs)`, run once and its JSON result recorded: every later run of the job
        (a retry, the end of a sleep or a wait, a redelivery) gets the recorded result without calling it.
        At least once (a process killed during it runs it again), recorded exactly once."""
        return self._steps().step(step_id, function, *args, **kwargs)

    def sleep(self, step_id: str, seconds: float) -> None:
        """End the attempt and resume after `seconds` (up to 365 days), holding nothing meanwhile."""
        self._steps().sleep(step_id, seconds)

    def sleep_until(self, step_id: str, when: datetime) -> None:
        """End the attempt and resume at `when` (an aware datetime, up to 365 days ahead)."""
        self._steps().sleep_until(step_id, when)

    def wait_for_event(
        self, step_id: str, name: str, *, match: Mapping[str, Any] | None = None, timeout_seconds: float
    ) -> Any:
        """Wait, holding nothing, for an event `name` of this job's tenant whose data holds every key and
        value of `match`: its data, or None once `timeout_seconds` (up to 365 days) have passed."""
        return self._steps().wait_for_event(step_id, name, match=match, timeout_seconds=timeout_seconds)

    def create_token(self, step_id: str, *, timeout_seconds: float) -> dict[str, Any]:
        """A token a person completes: {"id", "url"}. POST to `url` (no API key) or
        POST /v1/tokens/{id}:complete (the tenant's key) completes it, once, before `timeout_seconds`."""
        return self._steps().create_token(step_id, timeout_seconds=timeout_seconds)

    def wait_for_token(self, step_id: str, token: Mapping[str, Any] | str) -> Any:
        """Wait, holding nothing, for `token` (what create_token answered, or its id): the data it was
        completed with, or None once it expired."""
        return self._steps().wait_for_token(step_id, token)

    def run_job(self, step_id: str, job_type: str, payload: Any = None, **options: Any) -> Any:
        """Enqueue a child job (once, whatever repeats: its id derives from this job's and the step's) and
        wait for it: its result; ChildJobFailed if it ends dead or cancelled. `options`: max_attempts,
        timeout_seconds, concurrency, as on POST /v1/jobs."""
        return self._steps().run_job(step_id, job_type, payload, **options)

    def run_jobs(self, step_id: str, jobs: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Enqueue child jobs ({"type", "payload"?, options...} each) and wait for all: their results in
        order; ChildJobFailed naming every child that ended dead or cancelled."""
        return self._steps().run_jobs(step_id, jobs)

    def _steps(self) -> DurableRun:
        if self.durable is None:
            raise JobDead(
                "durable steps run only where the worker records them (a customer's job type, in the jobs"
                " function): this job's steps cannot be recorded here"
            )
        return self.durable


JobFunction = Callable[[Any, JobContext], Any]
PayloadValidator = Callable[[Any], None]
# Whether this tenant may submit this payload (a built-in type's check of what the stack allows each tenant).
TenantCheck = Callable[[Any, str], None]
# Whether a job must hold the store's claim to run: a flag for the whole type, or a function of the payload.
Exclusivity = bool | Callable[[Any], bool]
# The payload field whose value is a job's concurrency key: at most the type's concurrency_limit of a
# tenant's jobs with one key run at once (docs/decisions/concurrency-keys.md). A field, not a function:
# the worker, which applies it, holds a customer's declaration, not its code.
ConcurrencyKey = str


@dataclass(frozen=True)
class JobType:
    name: str
    run: JobFunction
    timeout_seconds: int = settings.DEFAULT_JOB_TIMEOUT_SECONDS  # a job's timeout unless it gives its own
    max_timeout_seconds: int = settings.MAX_JOB_TIMEOUT_SECONDS  # the most a job may ask for
    max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS  # a job's attempts unless it gives its own
    backoff_base_seconds: float = settings.RETRY_BACKOFF_BASE_SECONDS
    backoff_cap_seconds: float = settings.RETRY_BACKOFF_CAP_SECONDS
    # Raises InvalidPayload. A built-in's runs in the API at enqueue (a 422); a customer's in the
    # jobs function before the job's code (the job ends dead), as the API never imports a customer's module.
    validate: PayloadValidator | None = None
    # Run at enqueue after `validate`, with the enqueuing tenant: raise InvalidPayload if this tenant
    # may not submit this payload. Built-in types only; the type's own code checks again when it runs.
    check_tenant: TenantCheck | None = None
    # The payload as a JSON Schema: data, so the API enforces it at enqueue without the type's code.
    payload_schema: Mapping[str, Any] | None = None
    builtin: bool = False  # the platform's own (builtin_job_type), not a customer's
    # True: a job runs only under the store's claim, so while the store fails it waits (handed back).
    # False: a first delivery runs without the claim during a store outage
    # (docs/decisions/store-blips.md); a duplicate delivery in that window may run it twice.
    exclusive: Exclusivity = False
    # The payload field holding each job's concurrency key (a job's own `concurrency` wins over it), and
    # how many jobs of one key run at once. Both or neither.
    concurrency_key: ConcurrencyKey | None = None
    concurrency_limit: int | None = None
    # Flow-control defaults (`throttle`, `debounce`, `unique`, `priority`), as shared/flow/options.py parses them;
    # each key names the payload field a job's key is read from. A job's own option wins.
    flow: Mapping[str, Any] | None = None
    # True: a customer's type whose code this process does not load (only its declaration, written at
    # synth): the worker runs its jobs by invoking the jobs function (shared/worker/run/fence.py).
    in_jobs_function: bool = False

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
            # The key is the type's code (a function of the payload), run where the type is loaded: the
            # declaration says only that there is one, and its limit.
            "concurrency_key": self.concurrency_key,
            "concurrency_limit": self.concurrency_limit,
            "flow": dict(self.flow) if self.flow else None,
        }

    def declaration(self) -> dict[str, Any]:
        """What the API needs to accept a job of this type, as data (see `declared`).

        A customer's `validate` is not named: it runs with the type's code, and the API imports no customer module.
        """
        return {
            **self.describe(),
            "payload_schema": self.payload_schema,
            "validator": _reference(self.validate) if self.builtin else None,
            "tenant_check": _reference(self.check_tenant) if self.builtin else None,
        }


def _reference(function: Callable[..., Any] | None) -> str | None:
    """`module:qualname`, where the API imports a built-in's checker from when a job of its type is enqueued."""
    return f"{function.__module__}:{function.__qualname__}" if function else None


REGISTRY: dict[str, JobType] = {}  # every type registered in this process, by name


def job_type(
    name: str,
    *,
    timeout_seconds: int = settings.DEFAULT_JOB_TIMEOUT_SECONDS,
    max_timeout_seconds: int | None = None,
    max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS,
    backoff_base_seconds: float = settings.RETRY_BACKOFF_BASE_SECONDS,
    backoff_cap_seconds: float = settings.RETRY_BACKOFF_CAP_SECONDS,
    validate: PayloadValidator | None = None,
    payload_schema: Mapping[str, Any] | None = None,
    exclusive: Exclusivity = False,
    concurrency_key: ConcurrencyKey | None = None,
    concurrency_limit: int | None = None,
    throttle: Mapping[str, Any] | None = None,
    debounce: Mapping[str, Any] | None = None,
    unique: Mapping[str, Any] | None = None,
    priority: str | None = None,
) -> Callable[[JobFunction], JobFunction]:
    """Register a job type. Limits are checked here, so a bad one fails the synth, not a job.

    `payload_schema`: the payload as a JSON Schema (a dict); the API refuses a payload it does not
    accept with a 422 naming the field. Checked as a schema at synth (infra/jobs_package.py).
    `validate`: a function of the payload raising InvalidPayload, run in the jobs function before the job's
    code; a payload it refuses ends the job dead (no retry). Prefer `payload_schema`: it answers the
    caller at enqueue.
    `exclusive`: True if a job of this type must never run twice at once, even while the store
    fails (it then waits for the store); or a function of the payload deciding it per job.
    fails (it then waits for the store); or a function of the payload deciding it per job. The
    worker holds a customer's declaration, not its code, so it treats every job of a type with such
    a function as exclusive.
    `concurrency_key`, `concurrency_limit`: at most `concurrency_limit` of a tenant's jobs of this type
    with the same value of the payload field `concurrency_key` (a string or whole number, 1-128
    characters) run at once; the others wait without using an attempt. A job's own `concurrency` wins.
    `throttle`, `debounce`, `unique`, `priority`: the type's flow-control defaults, shaped as a job body gives
    them, each `key` naming the payload field a job's key is read from (docs/guides/flow-control.md). A job's
    own option wins.
    """
    return _registration(
        name,
        timeout_seconds=timeout_seconds,
        max_timeout_seconds=max_timeout_seconds,
        max_attempts=max_attempts,
        backoff_base_seconds=backoff_base_seconds,
        backoff_cap_seconds=backoff_cap_seconds,
        validate=validate,
        payload_schema=payload_schema,
        exclusive=exclusive,
        concurrency_key=concurrency_key,
        concurrency_limit=concurrency_limit,
        flow=_flow_defaults(name, throttle=throttle, debounce=debounce, unique=unique, priority=priority),
        builtin=False,
    )


def _flow_defaults(name: str, **declared: Any) -> dict[str, Any] | None:
    """A type's flow-control defaults, checked as a job's options are (a bad one fails the synth)."""
    given = {option: value for option, value in declared.items() if value is not None}
    try:
        flow_options.check_together(flow_options.parse(given))
    except InvalidRequest as invalid:
        raise ValueError(f"job type {name!r}: {invalid.field} {invalid.message}") from invalid
    return given or None


def builtin_job_type(
    name: str, *, check_tenant: TenantCheck | None = None, **options: Any
) -> Callable[[JobFunction], JobFunction]:
    """Register one of the platform's own types (shared/jobs/builtin_jobs.py, shared/targets/): as
    `job_type`, marked built-in, so a customer's type of the same name is refused as one. Its
    `validate` runs in the API at enqueue, so only a module of the platform's own may register one.
    `check_tenant`: whether the enqueuing tenant may submit the payload (see JobType.check_tenant)."""
    return _registration(name, **options, check_tenant=check_tenant, builtin=True)


def _registration(
    name: str,
    *,
    timeout_seconds: int = settings.DEFAULT_JOB_TIMEOUT_SECONDS,
    max_timeout_seconds: int | None = None,
    max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS,
    backoff_base_seconds: float = settings.RETRY_BACKOFF_BASE_SECONDS,
    backoff_cap_seconds: float = settings.RETRY_BACKOFF_CAP_SECONDS,
    validate: PayloadValidator | None = None,
    payload_schema: Mapping[str, Any] | None = None,
    exclusive: Exclusivity = False,
    check_tenant: TenantCheck | None = None,
    concurrency_key: ConcurrencyKey | None = None,
    concurrency_limit: int | None = None,
    flow: Mapping[str, Any] | None = None,
    builtin: bool,
) -> Callable[[JobFunction], JobFunction]:
    ceiling = settings.MAX_JOB_TIMEOUT_SECONDS if max_timeout_seconds is None else max_timeout_seconds
    _check_options(name, timeout_seconds, ceiling, max_attempts, backoff_base_seconds, backoff_cap_seconds)
    _check_payload_schema(name, payload_schema)
    _check_concurrency(name, concurrency_key, concurrency_limit)

    def register(function: JobFunction) -> JobFunction:
        if builtin and not _is_first_party(function):
            raise ValueError(
                f"job type {name!r}: only the platform's own modules register built-in types; use job_type"
            )
        if name in REGISTRY:
            owner = "a built-in type" if REGISTRY[name].builtin else "another job function"
            raise JobTypeClash(f"job type {name!r} is already {owner}; choose another name")
        REGISTRY[name] = JobType(
            name=name,
            run=function,
            timeout_seconds=timeout_seconds,
            max_timeout_seconds=ceiling,
            max_attempts=max_attempts,
            backoff_base_seconds=backoff_base_seconds,
            backoff_cap_seconds=backoff_cap_seconds,
            validate=validate,
            check_tenant=check_tenant,
            payload_schema=payload_schema,
            builtin=builtin,
            exclusive=exclusive,
            concurrency_key=concurrency_key,
            concurrency_limit=concurrency_limit,
            flow=flow,
        )
        return function

    return register


def _is_first_party(function: Callable[..., Any]) -> bool:
    module = function.__module__
    return module == FIRST_PARTY_PACKAGE or module.startswith(f"{FIRST_PARTY_PACKAGE}.")


def _check_payload_schema(name: str, schema: Mapping[str, Any] | None) -> None:
    """The shape a schema must have to be written into the declarations; whether it is a valid
    JSON Schema is checked at synth (infra/jobs_package.py), where the validator library is at hand."""
    if schema is None:
        return
    if not isinstance(schema, Mapping):
        raise ValueError(f"job type {name!r}: payload_schema must be a JSON Schema object (a dict)")
    try:
        json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"job type {name!r}: payload_schema must be plain JSON ({error})") from error


def _check_concurrency(name: str, key: ConcurrencyKey | None, limit: int | None) -> None:
    if key is None and limit is None:
        return
    if not isinstance(key, str) or not 0 < len(key) <= settings.MAX_CONCURRENCY_KEY_CHARS:
        raise ValueError(f"job type {name!r}: concurrency_key must name a payload field (a non-empty string)")
    most = settings.MAX_CONCURRENCY_LIMIT
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= most:
        raise ValueError(f"job type {name!r}: concurrency_limit must be a whole number from 1 to {most}")


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
