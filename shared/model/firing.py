"""A schedule's firing, as EventBridge Scheduler puts it on the queue, turned into a job message.

A schedule's target Input is a job message without an id (`JobMessage.firing_template`, in
shared/model/message.py): Scheduler fills in `<aws.scheduler.scheduled-time>` at each firing, and the id
is derived from (tenant, schedule, scheduled time), so a duplicate firing of one occurrence is the same
job and the worker's claim runs it once (`JobMessage.from_body` derives it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"  # a Scheduler context attribute, substituted at each firing
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def format_scheduled_time(moment: datetime) -> str:
    """A run's scheduled time in its canonical form (UTC, whole seconds): what its id is derived from."""
    return moment.astimezone(UTC).strftime(_TIME_FORMAT)


def scheduled_time(value: Any, sent_at: float) -> str:
    """The occurrence a firing belongs to, in one canonical form (UTC, seconds)."""
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        # The placeholder arrived verbatim: Scheduler on AWS always substitutes it, the
        # embedded emulator (ministack 1.5.33) never does. Fall back to the minute the
        # firing was sent in: schedules fire at most once a minute, so locally each
        # occurrence still gets its own id.
        minute = int(sent_at // 60 * 60)
        return datetime.fromtimestamp(minute, UTC).strftime(_TIME_FORMAT)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return format_scheduled_time(parsed)
