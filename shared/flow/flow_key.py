"""A flow-control key: the string that names what a throttle, a debounce or a unique lock counts. A job gives it
(`"throttle": {"key": "stripe", ...}`), or its type names a payload field that holds it
(`@job_type(throttle={"key": "account", ...})`), as a concurrency key's type does: a field, not a function,
because the API and the worker hold a type's declaration, never its code
(docs/decisions/concurrency-keys.md "Why a field, not a function").
"""

from __future__ import annotations

from typing import Any

from shared.errors import CorralError, InvalidRequest
from shared.flow import limits


class KeyUnreadable(CorralError, ValueError):
    """A job's payload has no usable value in the field its type reads a key from."""


def key_problem(value: Any) -> str | None:
    """Why `value` is not a key (None: it is one): a string of 1 to MAX_FLOW_KEY_CHARS characters."""
    most = limits.MAX_FLOW_KEY_CHARS
    if not isinstance(value, str) or not 0 < len(value) <= most:
        return f"must be a string of 1 to {most} characters"
    try:
        value.encode()
    except UnicodeEncodeError:  # JSON carries lone surrogates, which no store key or hash can take
        return "must be text (it holds a lone surrogate)"
    return None


def checked_key(value: Any, field: str) -> str:
    """`value` as a key; InvalidRequest naming `field` if it is not one."""
    problem = key_problem(value)
    if problem is not None:
        raise InvalidRequest(field, problem)
    return value


def key_of_payload(payload: Any, field: str) -> str:
    """The key a payload holds in `field`: a string, or a whole number as its text. KeyUnreadable otherwise
    (the job cannot be admitted: no retry changes its payload)."""
    value = payload.get(field) if isinstance(payload, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if key_problem(value) is not None:
        most = limits.MAX_FLOW_KEY_CHARS
        raise KeyUnreadable(
            f"its type reads the key from the payload field {field!r}, which must be a string of 1 to {most} "
            f"characters or a whole number; the payload has {value!r}"
        )
    return value


def whole_number(value: Any, field: str, low: int, high: int) -> int:
    """`value` as a whole number from `low` to `high`; InvalidRequest naming `field` otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidRequest(field, f"must be a whole number from {low:,} to {high:,}")
    return value


def fields_of(
    value: Any, field: str, required: frozenset[str], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """`value` as an object with exactly the `required` fields and some `optional` ones; InvalidRequest naming
    `field` (or its unknown or missing member) otherwise."""
    if not isinstance(value, dict):
        raise InvalidRequest(field, f"must be an object with {', '.join(sorted(required))}")
    unknown = sorted(set(value) - required - optional)
    if unknown:
        raise InvalidRequest(f"{field}.{unknown[0]}", "is not a field of it")
    missing = sorted(required - set(value))
    if missing:
        raise InvalidRequest(f"{field}.{missing[0]}", "is required")
    return value
