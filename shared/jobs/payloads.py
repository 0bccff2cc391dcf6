"""What a job's payload may contain, beyond its size: nesting, numbers, and Scheduler's keywords.

Every walk here is iterative, so a payload nested deeper than Python's recursion limit is
measured and rejected instead of crashing whatever looks at it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

# EventBridge Scheduler replaces these in a target's Input (<aws.scheduler.schedule-arn>, ...).
SCHEDULER_KEYWORD = "<aws.scheduler."


def depth(value: Any) -> int:
    """How deeply arrays and objects nest: 0 for a scalar, 1 for [] or {"a": 1}, 2 for [[1]]."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list | tuple):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in node)
    return deepest


def nodes(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(field path, value) for the value, every member and element below it, and every object key."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        here, node = stack.pop()
        yield here, node
        if isinstance(node, dict):
            for key, child in node.items():
                yield here, key
                stack.append((f"{here}.{key}", child))
        elif isinstance(node, list | tuple):
            stack.extend((f"{here}[{index}]", child) for index, child in enumerate(node))


def non_finite_number(value: Any, path: str) -> str | None:
    """The path of the first NaN or ±Infinity (JSON has neither), or None."""
    for here, node in nodes(value, path):
        if isinstance(node, float) and not math.isfinite(node):
            return here
    return None


def scheduler_keyword(value: Any, path: str) -> str | None:
    """The path of the first string or key that Scheduler would rewrite, or None."""
    for here, node in nodes(value, path):
        if isinstance(node, str) and SCHEDULER_KEYWORD in node.lower():
            return here
    return None
