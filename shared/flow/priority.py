"""Priorities: `"priority": "high" | "default" | "low"`. SQS has no priorities, so each level is a **lane**: a queue
of its own (`corral-jobs-high`, `corral-jobs`, `corral-jobs-low`), drained by an event source of its own with its
own share of the worker's concurrent batches (docs/decisions/priorities.md).

**The rule.** A job waits only behind jobs of its own level: a backlog of low (or default) jobs never delays a high
one, which its lane's pollers pick up as they would on an idle system. Each lane's share is a bound, not a
weight that lends: high and low each get PRIORITY_LANE_SHARE of the worker's concurrent batches (at least
PRIORITY_LANE_LEAST, an SQS event source's least), default the rest. Under a backlog of every level they run in
the ratio of their shares (1 : 8 : 1 by default), so low is never starved; a lane left idle is not lent to
another, which is what the design costs (Lambda's event sources cannot lend concurrency to each other).

Pure: the levels, the spec, and the split of a worker's concurrency into lanes (infra applies it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared import settings
from shared.errors import CorralError, InvalidRequest
from shared.flow import limits


class Priority(StrEnum):
    HIGH = "high"
    DEFAULT = "default"
    LOW = "low"

    @classmethod
    def parse(cls, value: Any, field: str = "priority") -> Priority:
        """A body's `priority` (or a type's, or a schedule's); InvalidRequest naming the field."""
        if value not in tuple(cls):
            raise InvalidRequest(field, f"must be one of {', '.join(cls)}")
        return cls(value)

    @classmethod
    def of(cls, value: str | None) -> Priority:
        """A message's or a record's `priority`, checked already (None: the default level, which neither carries)."""
        return cls.DEFAULT if value is None else cls(value)

    @property
    def carried(self) -> str | None:
        """The level as a message, a record and a view carry it: the default is left out."""
        return None if self is Priority.DEFAULT else self.value

    @property
    def queue_suffix(self) -> str:
        """What the level's queue adds to the jobs queue's name: nothing for default, whose queue it is."""
        return "" if self is Priority.DEFAULT else f"-{self.value}"

    def queue_name(self, names: settings.ResourceNames) -> str:
        """The physical name of the level's lane queue in the deployment `names` belongs to."""
        return names.queue + self.queue_suffix


@dataclass(frozen=True)
class Lanes:
    """How many of the worker's concurrent batches each level's event source may run at once."""

    high: int
    default: int
    low: int

    def of(self, priority: Priority) -> int:
        return {Priority.HIGH: self.high, Priority.DEFAULT: self.default, Priority.LOW: self.low}[priority]


class LanesDoNotFit(CorralError):
    """The worker's concurrency cannot give each lane its least: the synth names the setting to raise."""


def split(batches: int, share: float = limits.PRIORITY_LANE_SHARE) -> Lanes:
    """Split `batches` (the worker's concurrent batches: what its event sources may run at once in all) into lanes:
    high and low each `share` of it, rounded down, at least PRIORITY_LANE_LEAST; default the rest, at least as many
    as either. LanesDoNotFit where `batches` cannot hold that."""
    least = limits.PRIORITY_LANE_LEAST
    side = max(least, math.floor(batches * share))
    default = batches - 2 * side
    if default < max(least, side):
        raise LanesDoNotFit(
            f"{batches} concurrent batches cannot hold three priority lanes of at least {least} each, default the "
            f"largest: give the worker at least {3 * least}"
        )
    return Lanes(high=side, default=default, low=side)
