"""A schedule's firing, as EventBridge Scheduler puts it on the queue, turned into a job message.

A schedule's target Input is a job message without an id: Scheduler fills in
`<aws.scheduler.scheduled-time>` at each firing, and the id is derived from
(tenant, schedule, scheduled time), so a duplicate firing of one occurrence is
the same job and the worker's claim runs it once.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from shared import ids
from shared.model import JobMessage
from shared.signing import id_secret

SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"  # a Scheduler context attribute, substituted at each firing
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def firing_input(tenant: str, schedule: str, job_type: str, payload: Any, max_attempts: int) -> str:
    """The target Input of a recurring schedule."""
    return json.dumps(
        {
            "v": 1,
            "tenant": tenant,
            "type": job_type,
            "payload": payload,
            "max_attempts": max_attempts,
            "schedule": schedule,
            "scheduled_for": SCHEDULED_TIME,
        },
        separators=(",", ":"),
    )


def job_message(body: dict[str, Any], sent_at: float) -> JobMessage:
    """The job a queue message carries. `sent_at`: when it entered the queue (SQS SentTimestamp).

    A firing's enqueued_at is when Scheduler put it in the queue, not its scheduled
    time: enqueue-to-run then measures our platform, and Scheduler's own lateness
    shows as enqueued_at - scheduled_for.
    """
    if "id" in body or not body.get("schedule"):
        return JobMessage.from_dict(body)
    scheduled_for = scheduled_time(body.get("scheduled_for"), sent_at)
    job_id = ids.scheduled_id(id_secret(), str(body.get("tenant")), str(body["schedule"]), scheduled_for)
    return JobMessage.from_dict({**body, "id": job_id, "scheduled_for": scheduled_for, "enqueued_at": sent_at})


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
