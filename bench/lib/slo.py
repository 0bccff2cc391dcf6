"""From what was measured to the SLO figures. Definitions: docs/benchmark.md."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from bench.lib.load import Sample
from bench.lib.measure import Batch, DepthSample, JobRow

TARGETS = {
    "executed_pct": (">=", 96.0),
    "failed_enqueues": ("<=", 0),
    "enqueue_to_run_p99_ms": ("<=", 260.0),
    "enqueue_p99_during_over_before": ("<=", 1.5),
    "worker_utilisation_pct": ("<=", 88.0),
    "footprint": ("<=", 9),
    "bulk_enqueue_rps": (">=", 6000.0),
    "handler_over_send_message": ("<=", 1.3),
    "import_over_boto3": ("<=", 1.5),
}


def percentile(values: Iterable[float], pct: float) -> float | None:
    """Nearest-rank percentile (no interpolation: p99 of 100 values is the 99th smallest)."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def meets(key: str, value: float | None) -> bool | None:
    if key not in TARGETS or value is None:
        return None
    op, target = TARGETS[key]
    return value >= target if op == ">=" else value <= target


@dataclass(frozen=True)
class Executed:
    accepted: int
    succeeded: int
    succeeded_first_attempt: int
    retried: int  # succeeded after more than one attempt (a killed worker's jobs)
    unfinished: int  # accepted, but no finished record when the run ended
    dead: int

    @property
    def pct(self) -> float:
        return 100.0 * self.succeeded / self.accepted if self.accepted else 0.0


def executed(accepted_ids: list[str], rows: dict[str, JobRow]) -> Executed:
    found = [rows.get(job_id) for job_id in set(accepted_ids)]
    succeeded = [row for row in found if row and row.status == "succeeded"]
    return Executed(
        accepted=len(set(accepted_ids)),
        succeeded=len(succeeded),
        succeeded_first_attempt=sum(1 for row in succeeded if row.attempts == 1),
        retried=sum(1 for row in succeeded if row.attempts > 1),
        unfinished=sum(1 for row in found if row is None or row.status not in ("succeeded", "dead")),
        dead=sum(1 for row in found if row and row.status == "dead"),
    )


def enqueue_to_run_ms(accepted_ids: list[str], rows: dict[str, JobRow]) -> list[float]:
    """started_at - enqueued_at per job (the last attempt's start: a claim records its own start)."""
    values = []
    for job_id in accepted_ids:
        row = rows.get(job_id)
        if row and row.started_at is not None and row.enqueued_at is not None:
            values.append((row.started_at - row.enqueued_at) * 1000)
    return values


def waiting_from_due(rows: dict[str, JobRow], cron_ids: list[str], due_epoch: float) -> dict[str, JobRow]:
    """The rows with each cron's wait starting at its due second, not at its firing.

    A cron's record has enqueued_at = when Scheduler put its firing in the queue; what its owner
    feels is due -> started, so Scheduler's lateness counts against the SLO like our own delay.
    """
    due_rows = {job_id: replace(rows[job_id], enqueued_at=due_epoch) for job_id in cron_ids if job_id in rows}
    return {**rows, **due_rows}


def firing_lateness_ms(rows: dict[str, JobRow], cron_ids: list[str], due_epoch: float) -> list[float]:
    """How long after its due second each cron's firing reached the queue (Scheduler's own lateness)."""
    return [(rows[i].enqueued_at - due_epoch) * 1000 for i in cron_ids if i in rows and rows[i].enqueued_at]


ON_TIME_MS = 260.0  # the enqueue-to-run target: a job slower than this is a miss the report explains


@dataclass(frozen=True)
class Window:
    """Where a fault or the herd acted, in seconds since the load started (an instant: start == end)."""

    cause: str  # kill | blip | crons | herd
    start: float
    end: float


def cause_of_wait(enqueued: float, started: float, wait_ms: float, windows: list[Window], attempts: int = 1) -> str:
    """ "on time", else the first window (in the given order) the job's wait overlapped, else "unexplained".

    A job whose earlier attempt died (attempts > 1) while its wait overlapped a `kill` window is the
    kill's, whatever else its wait overlapped: the killed batch's own jobs.
    """
    if wait_ms <= ON_TIME_MS:
        return "on time"
    overlapped = [w.cause for w in windows if enqueued <= w.end and started >= w.start]
    if attempts > 1 and "kill" in overlapped:
        return "kill"
    return overlapped[0] if overlapped else "unexplained"


def backlog_end(depth: list[DepthSample], start: float, end: float, margin: int = 5) -> float:
    """When the queue (visible + in flight) is back to its depth before `start`: the end of what a
    fault at [start, end] left behind. A job waiting in that backlog waits because of the fault.

    The depth before is the largest sample in the 2 s before `start`, plus `margin` messages.
    Never before `end`; `end` itself when the depth was never sampled after it.
    """
    before = [s.visible + s.in_flight for s in depth if start - 2 <= s.at < start]
    level = max(before, default=0) + margin
    after = sorted((s for s in depth if s.at >= end), key=lambda s: s.at)
    return next((s.at for s in after if s.visible + s.in_flight <= level), after[-1].at if after else end)


def phase_latencies(samples: list[Sample], phase: str) -> list[float]:
    return [s.latency_ms for s in samples if s.phase == phase and s.status == 202]


def accepted_rate(samples: list[Sample], phase: str, seconds: float) -> float:
    return sum(1 for s in samples if s.phase == phase and s.status == 202) / seconds if seconds else 0.0


@dataclass(frozen=True)
class Utilisation:
    overall_pct: float
    peak_second_pct: float
    per_worker_pct: dict[str, float]
    capacity: int
    window_seconds: float


def utilisation(batches: list[Batch], capacity: int, window: tuple[float, float]) -> Utilisation:
    """Busy time / capacity: the worker's batch durations over (ESM max concurrency x the window).

    Per worker: its busy time over the window. Peak: the busiest 1-second bucket.
    """
    start, end = window
    seconds = max(end - start, 1e-9)
    per_worker: dict[str, float] = defaultdict(float)
    buckets: dict[int, float] = defaultdict(float)
    total = 0.0
    for batch in batches:
        begin = max(batch.started_at, start)
        finish = min(batch.started_at + batch.busy_ms / 1000, end)
        if finish <= begin:
            continue
        total += finish - begin
        per_worker[batch.environment] += finish - begin
        second = math.floor(begin)
        while second < finish:
            buckets[second] += min(finish, second + 1) - max(begin, second)
            second += 1
    return Utilisation(
        overall_pct=100 * total / (capacity * seconds),
        peak_second_pct=100 * max(buckets.values(), default=0.0) / capacity,
        per_worker_pct={name: round(100 * busy / seconds, 1) for name, busy in sorted(per_worker.items())},
        capacity=capacity,
        window_seconds=seconds,
    )
