"""A job's flow-control options, read together: `throttle`, `debounce`, `unique` and `priority`, as a job body, a
batch's job, a schedule's job and an event trigger's job carry them, and as a job type declares its defaults.

**Which wins.** A job's own option wins over its type's default, option by option; a type's default names the
payload field its key is read from, as a type's concurrency key does (`flow_key.key_of_payload`).

**What cannot go together** (`check_together`, a 422 naming the field; nothing is enqueued):
- `debounce` with `delay_seconds` or `run_at`: a debounced job runs `period_seconds` after its key's last arrival,
  which is its delay;
- `debounce` and `unique` with one key: one makes a later job supersede the waiting one, the other refuses it;
- `throttle` and `debounce` with one key whose throttle cannot admit the runs the debounce makes: a key's debounced
  runs come at least `period_seconds` apart, so at most ceil(throttle period / debounce period) fall in a throttle
  window; more than its `limit` and the throttle would hold a run back past the time the debounce promises it.
  With different keys both hold: the debounced run takes its throttle turn when it fires.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from shared.errors import InvalidRequest
from shared.flow.debounce import Debounce
from shared.flow.flow_key import KeyUnreadable, key_of_payload
from shared.flow.priority import Priority
from shared.flow.throttle import Throttle
from shared.flow.unique import Unique

FIELDS = ("throttle", "debounce", "unique", "priority")

_Keyed = TypeVar("_Keyed", Throttle, Debounce, Unique)


@dataclass(frozen=True)
class FlowOptions:
    """A job's flow-control options; None: not set (a priority of None is the default level)."""

    throttle: Throttle | None = None
    debounce: Debounce | None = None
    unique: Unique | None = None
    priority: Priority | None = None

    @property
    def writes_at_enqueue(self) -> bool:
        """Whether enqueuing the job writes to the store (its debounce group, its unique lock): a job with neither
        is one SQS call, as any job is (docs/decisions/enqueue-is-one-call.md)."""
        return self.debounce is not None or self.unique is not None

    @property
    def level(self) -> Priority:
        return self.priority or Priority.DEFAULT

    def to_dict(self) -> dict[str, Any]:
        """The options set, as a message, a record, a view and a schedule's job carry them (a default priority is
        left out)."""
        fields: dict[str, Any] = {}
        for name in ("throttle", "debounce", "unique"):
            spec = getattr(self, name)
            if spec is not None:
                fields[name] = spec.to_dict()
        if self.priority not in (None, Priority.DEFAULT):
            fields["priority"] = str(self.priority)
        return fields

    def over(self, defaults: FlowOptions) -> FlowOptions:
        """These options, each unset one taken from `defaults` (a type's, its keys already read)."""
        return FlowOptions(
            **{
                name: getattr(self, name) if getattr(self, name) is not None else getattr(defaults, name)
                for name in FIELDS
            }
        )


def parse(body: Mapping[str, Any], *, field_prefix: str = "") -> FlowOptions:
    """The options of a body (a job's, a batch's job's, a schedule's job's, a trigger's job's, a type's declaration);
    InvalidRequest naming the field under `field_prefix` ("jobs[3]."). Each alone: `check_together` after."""
    return FlowOptions(
        throttle=_spec(Throttle, body.get("throttle"), f"{field_prefix}throttle"),
        debounce=_spec(Debounce, body.get("debounce"), f"{field_prefix}debounce"),
        unique=_spec(Unique, body.get("unique"), f"{field_prefix}unique"),
        priority=None if body.get("priority") is None else Priority.parse(body["priority"], f"{field_prefix}priority"),
    )


def _spec(kind: type[_Keyed], value: Any, field: str) -> _Keyed | None:
    return None if value is None else kind.parse(value, field)


def problem(name: str, value: Any) -> str | None:
    """Why a message's option `name` is not valid (None: it is), in the words the message parser reports."""
    try:
        parse({name: value})
    except InvalidRequest as invalid:
        return (
            invalid.message if invalid.field == name else f"{invalid.field.removeprefix(name + '.')} {invalid.message}"
        )
    return None


def with_keys_from(defaults: FlowOptions, payload: Any) -> FlowOptions:
    """A type's defaults for one job: each key read from the payload field the default names. KeyUnreadable if the
    payload has no usable value there."""
    keyed: dict[str, Any] = {}
    for name in ("throttle", "debounce", "unique"):
        spec = getattr(defaults, name)
        keyed[name] = None if spec is None else dataclasses.replace(spec, key=key_of_payload(payload, spec.key))
    return FlowOptions(**keyed, priority=defaults.priority)


def check_together(options: FlowOptions, *, delayed: bool = False, field_prefix: str = "") -> None:
    """Refuse options that cannot all hold (the module's docstring says which), naming the field at fault."""
    throttle, debounce, unique = options.throttle, options.debounce, options.unique
    if debounce is not None and delayed:
        why = "a debounced job runs period_seconds after its key's last arrival: it takes no delay_seconds or run_at"
        raise InvalidRequest(f"{field_prefix}debounce", why)
    if debounce is not None and unique is not None and debounce.key == unique.key:
        why = (
            f"key {unique.key!r} is also the debounce's: a debounce lets a later job supersede the waiting one, a "
            "unique key refuses it; give them different keys, or choose one"
        )
        raise InvalidRequest(f"{field_prefix}unique", why)
    if throttle is not None and debounce is not None and throttle.key == debounce.key:
        runs = math.ceil(throttle.period_seconds / debounce.period_seconds)
        if runs > throttle.limit:
            why = (
                f"the debounce can start up to {runs} runs of key {throttle.key!r} in {throttle.period_seconds} s "
                f"(one every {debounce.period_seconds} s), and the throttle admits {throttle.limit}: it would hold "
                "debounced runs back; raise limit, shorten period_seconds, or give them different keys"
            )
            raise InvalidRequest(f"{field_prefix}throttle", why)


def of_job(
    body: Mapping[str, Any],
    type_defaults: Mapping[str, Any] | None,
    payload: Any,
    *,
    delayed: bool = False,
    field_prefix: str = "",
) -> FlowOptions:
    """A job's options as it runs with them: its own (`body`), each unset one its type's default (`type_defaults`,
    as its declaration keeps them, keys read from `payload`), checked together. InvalidRequest naming the field."""
    own = parse(body, field_prefix=field_prefix)
    if type_defaults:
        try:
            own = own.over(with_keys_from(parse(type_defaults), payload))
        except KeyUnreadable as unreadable:
            raise InvalidRequest(f"{field_prefix}payload", str(unreadable)) from unreadable
    check_together(own, delayed=delayed, field_prefix=field_prefix)
    return own
