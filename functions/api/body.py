"""The raw request body, checked and parsed once, before any route reads it: size, nesting, then JSON numbers.

The API reads every body as JSON, whatever its Content-Type says (`curl -d` sends
application/x-www-form-urlencoded, and API Gateway then base64-encodes it): the body is decoded
here and handed on marked as JSON, with its parsed value (the enqueue routes validate that value; the
resolver's routes read the text). Nesting is measured on the text, before any parser recurses
into it, so a body nested thousands of levels deep costs a scan, not a crash.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from shared import settings
from shared.jobs import payloads

# A body may nest twice as deep as a payload: far below where any parser or serialiser recurses into
# trouble, and deep enough that a payload a few levels over its limit (the deepest sits 3 levels in:
# {"jobs": [{"payload": ...}]}) is reported by its own field, one batch item at a time.
MAX_BODY_DEPTH = 2 * settings.MAX_PAYLOAD_DEPTH
METHODS_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})  # other methods' bodies are ignored, as the routes do

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"')  # a whole JSON string, escapes included
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]++")

# Every route that takes a body takes one JSON object; several jobs go in one object to the batch route.
NOT_AN_OBJECT = (
    'the request body must be a JSON object; to enqueue several jobs, POST {"jobs": [...]} to /v1/jobs:batch'
)


@dataclass(frozen=True)
class BodyProblem:
    status: int
    code: str
    message: str
    field: str = "body"


@dataclass(frozen=True)
class CheckedBody:
    event: dict[str, Any]  # the event, its body JSON text marked application/json
    value: Any = None  # the body parsed (None: no body)


class _NotANumber(float):
    """Stands in for a JSON number Python would read as NaN/±Infinity, until its path is known."""


def nesting_depth(text: str, stop_above: int) -> int:
    """How deeply brackets nest in JSON text (strings skipped); stops counting once above `stop_above`."""
    brackets = _NOT_A_BRACKET.sub("", _STRING.sub("", text))  # both in C: a 4 MiB body in tens of ms
    level = deepest = 0
    for bracket in brackets:
        if bracket in "[{":
            level += 1
            if level > deepest:
                deepest = level
                if deepest > stop_above:
                    break
        else:
            level -= 1
    return deepest


class _Numbers:
    """json.loads hooks that let every finite number through and mark the others, counting them.

    Integers keep json's own (C) parsing: one with more digits than Python converts
    (sys.get_int_max_str_digits, 4,300) raises ValueError, answered below.
    """

    def __init__(self) -> None:
        self.rejected = 0

    def _mark(self, value: float) -> float:
        self.rejected += 1
        return _NotANumber(value)

    def parse_float(self, text: str) -> float:
        value = float(text)  # 1e400 is read as inf
        return value if math.isfinite(value) else self._mark(value)

    def parse_constant(self, name: str) -> float:  # NaN, Infinity, -Infinity: Python's json accepts them, JSON has none
        return self._mark(float(name))


def _first_not_a_number(value: Any) -> str | None:
    for path, node in payloads.nodes(value, ""):
        if isinstance(node, _NotANumber):
            return path.lstrip(".") or "body"
    return None


def _text(event: dict[str, Any]) -> str | BodyProblem:
    raw = event.get("body") or ""
    try:
        if event.get("isBase64Encoded"):
            return base64.b64decode(raw, validate=True).decode("utf-8")
        return raw
    except (binascii.Error, UnicodeDecodeError):
        return BodyProblem(400, "malformed_json", "request body is not UTF-8 JSON")


def check(event: dict[str, Any]) -> CheckedBody | BodyProblem:
    """The event with its body as JSON text marked application/json, and its value; or the problem with the body."""
    text = _text(event)
    if isinstance(text, BodyProblem):
        return text
    if not text:
        return CheckedBody(event)
    size = len(text.encode())
    if size > settings.MAX_REQUEST_BODY_BYTES:
        return BodyProblem(
            413,
            "payload_too_large",
            f"the request body is {size} bytes, over the limit of {settings.MAX_REQUEST_BODY_BYTES} bytes;"
            " send fewer jobs per batch",
        )
    if nesting_depth(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH:
        return BodyProblem(
            422,
            "invalid_request",
            f"the request body nests more than {MAX_BODY_DEPTH} levels deep;"
            f" a payload may nest at most {settings.MAX_PAYLOAD_DEPTH} levels",
        )
    numbers = _Numbers()
    try:
        parsed = json.loads(text, parse_float=numbers.parse_float, parse_constant=numbers.parse_constant)
    except (json.JSONDecodeError, RecursionError):
        return BodyProblem(400, "malformed_json", "request body is not valid JSON")
    except ValueError:  # an integer too long to convert
        return BodyProblem(422, "invalid_request", "a number has more than 4300 digits")
    where = _first_not_a_number(parsed) if numbers.rejected else None
    if where is not None:
        return BodyProblem(422, "invalid_request", "NaN, Infinity and out-of-range numbers are not JSON numbers", where)
    if parsed is not None and not isinstance(parsed, dict):  # an array would otherwise pass for its first item
        return BodyProblem(422, "invalid_request", NOT_AN_OBJECT)
    headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
    headers["content-type"] = "application/json"
    return CheckedBody({**event, "body": text, "isBase64Encoded": False, "headers": headers}, parsed)
