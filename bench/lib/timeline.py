"""The benchmark as a timeline: phases of API enqueue load, and events (herd, kill, blip) at set moments.

A phase runs API enqueues at `rate_factor` x the base rate R. An event is a small callable run
once at its moment; it returns a note for the report, or raises NotImplementedError when the
piece it drives is not wired in yet (the run goes on and the report says "not wired").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# An event's action gets the run's context (bench.scenarios.run.RunContext) and returns a short note.
Action = Callable[[Any], str]


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: float
    rate_factor: float  # x the base rate R; 0 = no API load (drain)


@dataclass(frozen=True)
class Event:
    at: float  # seconds since the timeline started
    name: str  # herd | kill | blip | anything the plot should mark
    action: Action


@dataclass(frozen=True)
class Scenario:
    phases: list[Phase]
    events: list[Event] = field(default_factory=list)

    @property
    def load_seconds(self) -> float:
        return sum(phase.seconds for phase in self.phases)

    def phase_at(self, elapsed: float) -> Phase | None:
        start = 0.0
        for phase in self.phases:
            if start <= elapsed < start + phase.seconds:
                return phase
            start += phase.seconds
        return None

    def start_of(self, name: str) -> float:
        start = 0.0
        for phase in self.phases:
            if phase.name == name:
                return start
            start += phase.seconds
        raise KeyError(name)

    def window(self, name: str) -> tuple[float, float]:
        start = self.start_of(name)
        return start, start + next(phase.seconds for phase in self.phases if phase.name == name)


HERD_FACTOR = 3.0  # the midnight herd triples the volume


def midnight_herd(*, quick: bool, herd: Action, kill: Action, blip: Action) -> Scenario:
    """Steady load at R, a herd at 3R with a worker killed and a store blip inside it, then R again."""
    steady, herd_seconds, after = (15, 15, 10) if quick else (40, 30, 20)
    scenario = Scenario(
        phases=[
            Phase("steady", steady, 1.0),
            Phase("herd", herd_seconds, HERD_FACTOR),
            Phase("after", after, 1.0),
        ]
    )
    herd_start = scenario.start_of("herd")
    return Scenario(
        phases=scenario.phases,
        events=[
            Event(herd_start, "herd", herd),
            Event(herd_start + herd_seconds / 3, "kill", kill),
            Event(herd_start + herd_seconds / 2, "blip", blip),
        ],
    )
