"""What each field of a job message must be (`FIELD_CHECKS`): the wire validator's rules, one check per field,
each answering None or why the value cannot be read (shared/model/message.py `JobMessage.from_body` applies them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from shared import settings
from shared.flow import options as flow_options
from shared.model.lineage import STEP_PARENT, step_parent_problem
from shared.model.spec import BATCH_CALLBACK_KINDS, CALLBACK_KINDS, Callback
from shared.model.states import Overlap, Trigger


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_between(low: int, high: int) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if _is_int(value) and low <= value <= high else f"must be an integer from {low} to {high}"

    return check


def text_check(max_length: int) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        ok = isinstance(value, str) and 0 < len(value) <= max_length and _encodable(value)
        return None if ok else f"must be a non-empty string of at most {max_length} characters"

    return check


def _encodable(text: str) -> bool:
    """JSON can carry lone surrogates ("\\ud800") that no store or HMAC can take as text."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _optional(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    return lambda value: None if value is None else check(value)


_LAST_TIMESTAMP = 10**11  # epoch seconds in the year 5138: numbers the store and the listing index can hold


def timestamp_check(value: Any) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 1 <= value < _LAST_TIMESTAMP
    return None if ok else "must be a positive number (epoch seconds)"


def _payload(value: Any) -> str | None:
    size = len(json.dumps(value, separators=(",", ":")).encode())
    limit = settings.MAX_PAYLOAD_BYTES
    return None if size <= limit else f"is {size} bytes serialised, over the limit of {limit} bytes"


def _one_of(*allowed: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in allowed else f"must be one of {', '.join(allowed)}"

    return check


def _version(value: Any) -> str | None:
    return None if _is_int(value) and value == 1 else "must be 1"


def concurrency_problem(value: Any) -> str | None:
    if value is None:
        return None
    key_ok = isinstance(value, dict) and text_check(settings.MAX_CONCURRENCY_KEY_CHARS)(value.get("key")) is None
    limit_ok = isinstance(value, dict) and _int_between(1, settings.MAX_CONCURRENCY_LIMIT)(value.get("limit")) is None
    if key_ok and limit_ok and set(value) == {"key", "limit"}:
        return None
    return (
        f'must be {{"key": a string of 1 to {settings.MAX_CONCURRENCY_KEY_CHARS} characters, '
        f'"limit": 1 to {settings.MAX_CONCURRENCY_LIMIT}}}'
    )


def _batch_member(value: Any) -> str | None:
    shape = f'must be {{"id": a batch id, "index": 0 to {settings.MAX_BATCH_SIZE - 1}, "generation"?: 0 or more}}'
    if value is None:
        return None
    if not isinstance(value, dict) or not {"id", "index"} <= set(value) <= {"id", "index", "generation"}:
        return shape
    checks = (
        text_check(MAX_NAME_LENGTH)(value["id"]),
        _int_between(0, settings.MAX_BATCH_SIZE - 1)(value["index"]),
        _int_between(0, 10**6)(value.get("generation", 0)),
    )
    return shape if any(checks) else None


def _callbacks(value: Any) -> str | None:
    """A job's callbacks: {"on_success"?, "on_failure"?} each a job spec (type, payload, max_attempts...)."""
    if value is None:
        return None
    shape = 'must be {"on_success"?: a job, "on_failure"?: a job}, each with its type and max_attempts'
    if not isinstance(value, dict) or not value or not set(value) <= set(CALLBACK_KINDS):
        return shape
    for spec in value.values():
        if not isinstance(spec, dict) or not {"type", "max_attempts"} <= set(spec) <= set(Callback.fields()):
            return shape
        if text_check(MAX_NAME_LENGTH)(spec["type"]) or _int_between(1, settings.MAX_MAX_ATTEMPTS)(
            spec["max_attempts"]
        ):
            return shape
        if concurrency_problem(spec.get("concurrency")) or spec.get("include_parent_payload", True) is not True:
            return shape
    return _payload(value)  # both callbacks' payloads together within a payload's limit (the record keeps them)


_PARENT_KINDS = {"job": CALLBACK_KINDS, "batch": BATCH_CALLBACK_KINDS}


def _parent(value: Any) -> str | None:
    """A callback's parent: {"kind": "job" | "batch", "id", "callback": which of its callbacks this job is}."""
    if value is None:
        return None
    if isinstance(value, dict) and value.get("kind") == STEP_PARENT:
        return step_parent_problem(value, text_check(MAX_NAME_LENGTH))
    ok = (
        isinstance(value, dict)
        and set(value) == {"kind", "id", "callback"}
        and value["kind"] in _PARENT_KINDS
        and value["callback"] in _PARENT_KINDS[value["kind"]]
        and text_check(MAX_NAME_LENGTH)(value["id"]) is None
    )
    return None if ok else 'must be {"kind": "job" or "batch", "id", "callback": the callback it is}'


def _started_by(value: Any) -> str | None:
    """What started a trigger's job: {"trigger": its name, "event": the event's id} (shared/waits/triggers.py)."""
    if value is None:
        return None
    ok = isinstance(value, dict) and set(value) == {"trigger", "event"}
    if ok and all(text_check(MAX_NAME_LENGTH)(text) is None for text in value.values()):
        return None
    return 'must be {"trigger": its name, "event": the event\'s id}'


MAX_NAME_LENGTH = 256  # tenants, job types, schedule names, timestamps: far above any real one
# Every field a job message may carry, and what it must be. `id`/`tenant` are checked first, apart.
FIELD_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "v": _version,
    "type": text_check(MAX_NAME_LENGTH),
    "payload": _payload,
    "max_attempts": _int_between(1, settings.MAX_MAX_ATTEMPTS),
    "enqueued_at": timestamp_check,
    "schedule": _optional(text_check(MAX_NAME_LENGTH)),
    "scheduled_for": _optional(text_check(MAX_NAME_LENGTH)),
    "timeout_seconds": _optional(_int_between(1, settings.MAX_JOB_TIMEOUT_SECONDS)),
    "due_at": _optional(timestamp_check),
    "concurrency": concurrency_problem,
    "throttle": lambda value: None if value is None else flow_options.problem("throttle", value),
    "debounce": lambda value: None if value is None else flow_options.problem("debounce", value),
    "debounce_seq": _optional(_int_between(1, 2**53)),
    "unique": lambda value: None if value is None else flow_options.problem("unique", value),
    "priority": lambda value: None if value is None else flow_options.problem("priority", value),
    "batch": _batch_member,
    "callbacks": _callbacks,
    "parent": _parent,
    "started_by": _started_by,
    "overlap": _optional(_one_of(*Overlap)),
    "trigger": _optional(_one_of(Trigger.MANUAL, Trigger.BACKFILL)),
    "request": _optional(text_check(MAX_NAME_LENGTH)),
}
REQUIRED = ("type", "max_attempts", "enqueued_at")
