"""A schedule's firing, as EventBridge Scheduler puts it on the queue, turned into a job message.

A schedule's target Input is a job message without an id: Scheduler fills in
`<aws.scheduler.scheduled-time>` at each firing, and the id is derived from
(tenant, schedule, scheduled time), so a duplicate firing of one occurrence is
the same job and the worker's claim runs it once (`JobMessage.from_body` derives it).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"  # a Scheduler context attribute, substituted at each firing
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def firing_input(
    tenant: str, schedule: str, job_type: str, payload: Any, max_attempts: int, timeout_seconds: int | None = None
) -> str:
    """The target Input of a recurring schedule. No timeout_seconds: each run gets its type's default."""
    message: dict[str, Any] = {
        "v": 1,
        "tenant": tenant,
        "type": job_type,
        "payload": payload,
        "max_attempts": max_attempts,
        "schedule": schedule,
        "scheduled_for": SCHEDULED_TIME,
    }
    if timeout_seconds is not None:
        message["timeout_seconds"] = timeout_seconds
    return json.dumps(message, separators=(",", ":"))


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
    return parsed.astimezone(UTC).strftime(_TIME_FORMAT)
