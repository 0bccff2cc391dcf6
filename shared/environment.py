"""What the stack tells each function, written once: infra writes it, the functions read it once.

`FunctionEnv` is the typed, frozen form. infra builds one and writes it into the functions'
environment (`as_environment()`); code in `shared/` reads `current()`, parsed from the process
environment the first time it is asked for. Each field travels as `CORRAL_<FIELD>` (`variable()`);
this module is the only place that spells those names. Tests build a `FunctionEnv` and install it
with `use()` instead of setting variables one by one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from shared import profiles, settings

_PREFIX = "CORRAL_"
_COMMA_LIST = "comma"  # how a tuple field travels: "a,b" (host names) or a JSON list (name patterns)
_JSON_LIST = "json"


@dataclass(frozen=True)
class FunctionEnv:
    # The deployment's stage (`-c corral:stage=...`, "" for none): the names it gives its queues, table,
    # functions and schedule group (settings.ResourceNames). A table or group not given is the stage's.
    stage: str = ""
    # Resources. Empty strings are "not deployed here" (a tool or test that never reaches them).
    table: str = settings.TABLE_NAME
    queue_url: str = ""
    dlq_url: str = ""
    queue_arn: str = ""
    # The priority lanes' queues beside the jobs queue, which is the default lane's (shared/flow/priority.py;
    # shared/aws/queue.py `lane_url` picks a level's): their URLs for SQS, their ARNs for Scheduler's targets.
    high_queue_url: str = ""
    low_queue_url: str = ""
    high_queue_arn: str = ""
    low_queue_arn: str = ""
    # The backstop (settings.ResourceNames.backstop): the jobs queue's SQS dead-letter target, and
    # Scheduler's for the firings it cannot deliver; the worker drains it into the DLQ.
    backstop_url: str = ""
    backstop_arn: str = ""
    schedule_group: str = settings.SCHEDULE_GROUP
    scheduler_role_arn: str = ""
    # Whether Scheduler sets the tenant's message group on the firings it sends (see settings).
    scheduler_sets_message_group: bool = settings.SCHEDULER_SETS_MESSAGE_GROUP
    # Job items go through DAX (aws profile) or the local status cache; neither: DynamoDB itself.
    dax_endpoint: str = ""
    status_cache_endpoint: str = ""
    # Worker timing, set per profile (profiles.Profile).
    lease_seconds: int = profiles.PROFILES["aws"].lease_seconds
    hand_back_unit_seconds: float = settings.HAND_BACK_UNIT_SECONDS
    hand_back_max_seconds: float = profiles.PROFILES["aws"].visibility_timeout_seconds
    # The jobs queue's maxReceiveCount as the worker sees it, and the receive at which a waiting job is
    # sent again as a fresh message (profiles.Profile; shared/worker/admit/waiting.py).
    receive_budget: int = profiles.PROFILES["aws"].receive_budget
    wait_resend_at: int = profiles.PROFILES["aws"].wait_resend_at
    job_timeout_ceiling: int = settings.MAX_JOB_TIMEOUT_SECONDS
    api_key_cache_seconds: float = settings.API_KEY_CACHE_SECONDS
    # HTTP targets' guard (shared/targets/http_policy.py) and their default timeout.
    http_allow_plain: bool = False
    http_allow_loopback: bool = False
    # Internal hosts HTTP jobs may reach, each granted to tenants: "host=acme|globex" or "host=*".
    http_private_hosts: tuple[str, ...] = field(default=(), metadata={"list": _COMMA_LIST})
    # Of those, the hosts whose response bodies come back in a job's result and errors.
    http_private_bodies: tuple[str, ...] = field(default=(), metadata={"list": _COMMA_LIST})
    # Ports HTTP jobs may call besides 443 (and 80 with plain http): "8443,9443".
    http_ports: tuple[str, ...] = field(default=(), metadata={"list": _COMMA_LIST})
    http_timeout_seconds: float = settings.HTTP_DEFAULT_TIMEOUT_SECONDS
    # Job packages this function imports (comma-separated): on the jobs function the customer's
    # (`corral:jobs`), on the worker only the local profile's test tooling (local/chaos_jobs).
    jobs_package: str = ""
    # The function that runs customer's job types, which the worker invokes ("": none deployed).
    jobs_function: str = ""
    # Durable jobs (docs/decisions/durable-jobs.md): the API's base URL, which a token's capability URL
    # starts with (the worker's, on AWS: infra/stack.py; "": the URL is the path alone), and the wait beyond
    # which a sleep's or a timeout's wake message is a one-time Scheduler schedule instead of an SQS delay
    # (the local profile lowers it).
    api_url: str = ""
    wake_scheduler_threshold_seconds: int = settings.WAKE_SCHEDULER_THRESHOLD_SECONDS
    # The Lambda functions `lambda` jobs may invoke.
    lambda_targets: tuple[str, ...] = field(default=(), metadata={"list": _JSON_LIST})

    def as_environment(self) -> dict[str, str]:
        """The function environment variables for this value (unset optional endpoints are left out)."""
        written: dict[str, str] = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.name in _OMITTED_WHEN_EMPTY and value == "":
                continue
            written[variable(spec.name)] = _encode(value, spec.metadata.get("list"))
        return written

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> FunctionEnv:
        """The value a function's environment holds; a variable that is missing keeps its default."""
        found: dict[str, Any] = {}
        for spec in fields(cls):
            raw = environ.get(variable(spec.name))
            if raw is not None:
                found[spec.name] = _decode(raw, spec.type, spec.metadata.get("list"))
        names = settings.names(found.get("stage", ""))
        return cls(**{"table": names.table, "schedule_group": names.schedule_group, **found})

    @property
    def names(self) -> settings.ResourceNames:
        """The physical names of the deployment this environment belongs to."""
        return settings.names(self.stage)

    def but(self, **changes: Any) -> FunctionEnv:
        """This environment with some fields changed."""
        return replace(self, **changes)


_OMITTED_WHEN_EMPTY = frozenset({"dax_endpoint", "status_cache_endpoint"})


def variable(field_name: str) -> str:
    """The environment variable a field travels in."""
    if field_name not in _FIELD_NAMES:
        raise KeyError(f"FunctionEnv has no field {field_name!r}")
    return _PREFIX + field_name.upper()


def _encode(value: object, list_format: str | None) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return json.dumps(list(value), separators=(",", ":")) if list_format == _JSON_LIST else ",".join(value)
    return str(value)


def _decode(raw: str, annotation: object, list_format: str | None) -> object:
    kind = str(annotation)
    if kind == "bool":
        return raw == "1"
    if kind == "int":
        return int(raw)
    if kind == "float":
        return float(raw)
    if kind.startswith("tuple"):
        if list_format == _JSON_LIST:
            return tuple(str(item) for item in json.loads(raw or "[]"))
        return tuple(item.strip() for item in raw.split(",") if item.strip())
    return raw


_FIELD_NAMES = frozenset(spec.name for spec in fields(FunctionEnv))
_current: FunctionEnv | None = None


def current() -> FunctionEnv:
    """This process's environment, read once (a function's environment does not change while it runs)."""
    global _current
    if _current is None:
        _current = FunctionEnv.from_environment(os.environ)
    return _current


def change(**fields: Any) -> FunctionEnv:
    """Install this process's environment with some fields changed (tests, tools), and return it."""
    changed = current().but(**fields)
    use(changed)
    return changed


def use(value: FunctionEnv | None) -> None:
    """Install `value` as this process's environment (tests, tools); None reads the process environment again."""
    global _current
    _current = value
