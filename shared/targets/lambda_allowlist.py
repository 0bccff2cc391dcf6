"""Which Lambda functions a `lambda` job may invoke: the stack's allowlist (`corral:lambda_targets`).

A pattern is a function name (`report-builder`, `billing-*`), meaning a function in the stack's
own account and Region, or a function ARN (`arn:aws:lambda:eu-west-1:123456789012:function:etl-*`).
`*` and `?` are the only wildcards, with IAM's meaning, so the worker's IAM policy (infra/lambda_targets.py)
and this check grant exactly the same functions. A target may carry a qualifier (`name:alias`,
`name:3`); the unqualified name is what must match.
"""

from __future__ import annotations

import fnmatch
import re

from shared import environment
from shared.errors import CorralError

_NAME = re.compile(r"^[A-Za-z0-9_*?-]{1,64}$")
_ARN = re.compile(r"^arn:[a-z*?-]+:lambda:[a-z0-9*?-]+:[0-9*?]+:function:[A-Za-z0-9_*?-]{1,64}$")


class BadPattern(CorralError, ValueError):
    """A Lambda target pattern that names no function."""


def check_pattern(pattern: str) -> str:
    if not (_NAME.match(pattern) or _ARN.match(pattern)):
        raise BadPattern(
            f"lambda target {pattern!r}: give a function name or an unqualified function ARN, with * and ? as wildcards"
        )
    return pattern


def allowed_patterns() -> list[str]:
    return list(environment.current().lambda_targets)


def unqualified(target: str) -> str:
    """`name`, `name:alias`, `arn:...:function:name[:alias]` -> the name or the ARN without its qualifier."""
    if target.startswith("arn:"):
        return ":".join(target.split(":")[:7])
    return target.split(":", 1)[0]


def is_allowed(target: str, patterns: list[str]) -> bool:
    function = unqualified(target)
    is_arn = function.startswith("arn:")
    return any(pattern.startswith("arn:") == is_arn and fnmatch.fnmatchcase(function, pattern) for pattern in patterns)
