"""Throttle: at most `limit` of a tenant's jobs with one key start in any window of `period_seconds`, fleet-wide,
however short the jobs are (a concurrency key bounds how many run at once; a throttle, how many start).

**Turns.** A job does not race for the window's next opening: as it first reaches a worker it is given its
**turn**, the earliest time its start keeps every window within the limit after the turns given before it, and
it starts then (docs/decisions/throttle.md). Turns are given in the order jobs reach the workers, a batch's jobs
in enqueue order, so a backlog starts in that order, spread over the windows, never all at a window's edge.

**The log.** A key's turns are counted in its **start log**: runs of (time, how many), oldest first, holding at
most the key's last `limit` turns. A turn at `t` must start by `t` + half of THROTTLE_START_GRACE_SECONDS and is
counted at `t` + all of it, rounded up to the log's grid (a 64th of the period): a start is never counted before
it happened, with the other half to spare for two workers' clocks, so for any `limit` + 1 turns in the order
given, the last starts at least `period_seconds` after the first did. Counting a start later than it happened
only ever makes later turns wait longer: the log may merge runs (moving them later) to stay small, and the
throttle errs toward fewer starts, never more.

The rule for the next turn, `now` being the taker's clock:

    turn = max(now, the key's last turn, the oldest of its last `limit` counts + period)

Pure arithmetic on integer milliseconds; shared/store/flow/throttle_items.py keeps the log in one item and applies
this in a conditional write.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared.flow import limits
from shared.flow.flow_key import checked_key, fields_of, whole_number

_FIELDS = frozenset({"key", "limit", "period_seconds"})
# Runs the log keeps at most: the cells of one period, and one more for a run just past it. Beyond that the two
# closest runs merge into the later one.
MAX_RUNS = limits.THROTTLE_LOG_CELLS + 2


@dataclass(frozen=True)
class Throttle:
    """At most `limit` starts of the tenant's jobs with `key` in any window of `period_seconds`."""

    key: str
    limit: int
    period_seconds: int

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "limit": self.limit, "period_seconds": self.period_seconds}

    @classmethod
    def parse(cls, value: Any, field: str = "throttle") -> Throttle:
        """A body's `throttle` (or a type's, whose key names a payload field); InvalidRequest naming the field."""
        fields = fields_of(value, field, _FIELDS)
        return cls(
            key=checked_key(fields["key"], f"{field}.key"),
            limit=whole_number(fields["limit"], f"{field}.limit", 1, limits.THROTTLE_MAX_LIMIT),
            period_seconds=whole_number(
                fields["period_seconds"],
                f"{field}.period_seconds",
                limits.THROTTLE_MIN_PERIOD_SECONDS,
                limits.THROTTLE_MAX_PERIOD_SECONDS,
            ),
        )

    @property
    def period_ms(self) -> int:
        return self.period_seconds * 1000

    @property
    def grid_ms(self) -> int:
        """The log's grid: a 64th of the period, in whole milliseconds."""
        return math.ceil(self.period_ms / limits.THROTTLE_LOG_CELLS)


@dataclass(frozen=True)
class Turn:
    """When a job may start (`at`), and by when it must have started (`start_by`), epoch seconds, on the clock of the
    worker that gave the turn. A job that cannot start by then takes another turn."""

    at: float
    start_by: float


@dataclass(frozen=True)
class StartLog:
    """A key's recent turns, as the store keeps them: `runs` of (counted at, how many), epoch milliseconds, oldest
    first, at most the key's last `limit` turns; and the latest turn given (`last_turn_ms`)."""

    runs: tuple[tuple[int, int], ...] = ()
    last_turn_ms: int = 0

    @property
    def counted(self) -> int:
        return sum(count for _, count in self.runs)


def take(log: StartLog, throttle: Throttle, now: float, count: int) -> tuple[StartLog, list[Turn]]:
    """Give `count` jobs their turns, in order, at `now` (the taker's clock, epoch seconds): the log that counts
    them, and their turns, each no earlier than the one before."""
    runs = [list(run) for run in log.runs]
    last = log.last_turn_ms
    now_ms = math.floor(now * 1000)
    period, grid = throttle.period_ms, throttle.grid_ms
    grace = math.ceil(limits.THROTTLE_START_GRACE_SECONDS * 1000)
    turns = []
    for _ in range(count):
        while runs and runs[0][0] + period <= now_ms:
            runs.pop(0)  # counted a period or more before now: it holds back no start from now on
        _keep_last(runs, throttle.limit)
        at = max(now_ms, last)
        if sum(count for _, count in runs) >= throttle.limit:
            at = max(at, runs[0][0] + period)
        counted = math.ceil((at + grace) / grid) * grid
        if runs and runs[-1][0] >= counted:
            runs[-1][1] += 1  # counted no earlier than the latest run (it can be later: merged runs)
        else:
            runs.append([counted, 1])
        _keep_last(runs, throttle.limit)
        _merge_closest(runs)
        last = at
        turns.append(Turn(at=at / 1000, start_by=(at + grace // 2) / 1000))
    return StartLog(tuple((at, count) for at, count in runs), last), turns


def _keep_last(runs: list[list[int]], limit: int) -> None:
    """Keep the last `limit` counts: only the oldest of those decides the next turn."""
    excess = sum(count for _, count in runs) - limit
    while excess > 0:
        dropped = min(excess, runs[0][1])
        runs[0][1] -= dropped
        excess -= dropped
        if runs[0][1] == 0:
            runs.pop(0)


def _merge_closest(runs: list[list[int]]) -> None:
    """Beyond MAX_RUNS, merge the two closest runs into the later one's time: a count moved later only makes
    later turns wait longer, never shorter."""
    while len(runs) > MAX_RUNS:
        gaps = [runs[i + 1][0] - runs[i][0] for i in range(len(runs) - 1)]
        i = gaps.index(min(gaps))
        runs[i + 1][1] += runs[i][1]
        del runs[i]


def starts_within_limit(starts: Sequence[float], throttle: Throttle) -> bool:
    """Whether no half-open window of `period_seconds` holds more than `limit` of `starts` (epoch seconds): any
    `limit` + 1 of them, in time order, span at least the period."""
    ordered = sorted(starts)
    span = [ordered[i + throttle.limit] - ordered[i] for i in range(len(ordered) - throttle.limit)]
    return all(gap >= throttle.period_seconds - 1e-6 for gap in span)
