"""The states a job goes through, and the two fields that say how a schedule's run started and overlaps."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # will retry
    DEAD = "dead"  # gave up; its message is in the DLQ
    CANCELLED = "cancelled"  # cancelled before it ran; a delivery of it is acknowledged, never run
    # A schedule's run not started because its previous run was still live (overlap "skip"); it cost no
    # attempt, and a delivery of it is acknowledged unrun (docs/decisions/schedule-overlap.md).
    SKIPPED = "skipped"
    # A durable job that sleeps or waits (an event, a token, a child): it holds no worker, slot or attempt
    # until a wake message claims it (docs/decisions/durable-jobs.md "Waiting"). Not finished.
    WAITING = "waiting"

    @property
    def finished(self) -> bool:
        return self in (Status.SUCCEEDED, Status.DEAD, Status.CANCELLED, Status.SKIPPED)


class Overlap(StrEnum):
    """What a schedule's run does while an earlier run of that schedule is still queued, running or failed."""

    ALLOW = "allow"  # it runs anyway (the default)
    SKIP = "skip"  # it is recorded `skipped` instead of running


class Trigger(StrEnum):
    """What started a schedule's run (its record and message say so; none: the schedule's own firing)."""

    SCHEDULE = "schedule"  # a firing of the schedule (never written: it is what no `trigger` means)
    MANUAL = "manual"  # POST /v1/schedules/{name}:trigger
    BACKFILL = "backfill"  # POST /v1/schedules/{name}:backfill
