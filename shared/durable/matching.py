"""Events and the waits they resume: names, `match`, and where a wait is indexed so an event finds it.

An event `{"name", "data"}` resumes every wait of its tenant for that name whose `match` it contains:
each key of `match` is a top-level key of the event's `data`, with an equal value (JSON equality: `1`
equals `1.0`, never `true`; objects and arrays compare whole). No `match` (or `{}`) takes any event of
the name.

To find its waits without reading all of a name's, an event reads only the index pages its data can
match: a wait is indexed under one **index pair** of its match (its first key, in sorted order, whose
value is a scalar), or under the name alone when it has none; an event reads the name-alone pages and,
for each match key the channel knows waits use, the pages of (that key, its value in the data). So a
thousand orders waiting for `payment.received` with `{"order_id": ...}` cost each event two small reads,
not a thousand entries (shared/durable/events.py).

Pure: the jobs function checks a wait's arguments with it; the worker and the store key their items by it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from shared.durable import limits

# A wait indexed under its name alone (no match, or no scalar value in it).
ANY = ""


def name_problem(name: object) -> str | None:
    """Why `name` cannot name an event, if it cannot."""
    most = limits.MAX_EVENT_NAME_CHARS
    if not isinstance(name, str) or not 0 < len(name) <= most:
        return f"an event name must be a string of 1 to {most} characters"
    if any(ord(character) < 0x20 or ord(character) == 0x7F for character in name):
        return "an event name must be printable"
    try:
        name.encode()
    except UnicodeEncodeError:
        return "an event name must be text"
    return None


def checked_match(match: object) -> tuple[dict[str, Any] | None, str | None]:
    """`match` as a wait keeps it ({} for none), or None and why it cannot be one."""
    if match is None:
        return {}, None
    if not isinstance(match, Mapping) or not all(isinstance(key, str) for key in match):
        return None, "match must be an object (keys and values the event's data must hold)"
    try:
        text = json.dumps(dict(match), separators=(",", ":"), allow_nan=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as error:
        return None, f"match must be JSON ({type(error).__name__})"
    if len(text.encode()) > limits.MAX_MATCH_BYTES:
        return (
            None,
            f"match is {len(text.encode())} bytes serialised, over the limit of {limits.MAX_MATCH_BYTES}",
        )
    return json.loads(text), None


def matches(match: Mapping[str, Any], data: Any) -> bool:
    """Whether an event's `data` holds every key of `match` with an equal value."""
    if not match:
        return True
    if not isinstance(data, Mapping):
        return False
    return all(key in data and same(value, data[key]) for key, value in match.items())


def same(left: Any, right: Any) -> bool:
    """JSON equality: numbers by value (1 == 1.0), booleans apart from numbers, containers whole."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if _is_number(left) or _is_number(right):
        return _is_number(left) and _is_number(right) and left == right
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(same(left[key], right[key]) for key in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and left == right


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | bool) or (_is_number(value) and math.isfinite(value))


def canonical(value: Any) -> str:
    """A scalar as an index key spells it: numbers by value (1.0 as 1), so equal values share a key."""
    if _is_number(value) and not isinstance(value, bool) and float(value).is_integer() and abs(value) < 2**53:
        value = int(value)
    return json.dumps(value, separators=(",", ":"))


def index_pair(match: Mapping[str, Any]) -> tuple[str, str]:
    """Where a wait with `match` is indexed: (its first key with a scalar value, that value), else (ANY, "")."""
    for key in sorted(match):
        if _is_scalar(match[key]):
            return key, canonical(match[key])
    return ANY, ""


def candidate_pairs(data: Any, keys_in_use: set[str]) -> list[tuple[str, str]]:
    """The index pairs an event with `data` reads: the name alone, and each key waits use that the data holds
    with a scalar value."""
    pairs = [(ANY, "")]
    if isinstance(data, Mapping):
        for key in sorted(keys_in_use - {ANY}):
            if key in data and _is_scalar(data[key]):
                pairs.append((key, canonical(data[key])))
    return pairs


def digest(*parts: str) -> str:
    """A fixed-length name for a tenant's channel or index (an event name may hold any character)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def channel_digest(name: str) -> str:
    return digest("channel", name)


def index_digest(name: str, key: str, value: str) -> str:
    return digest("index", name, key, value)
