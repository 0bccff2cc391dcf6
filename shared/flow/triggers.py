"""Event triggers: `POST /v1/triggers {"name", "event", "match"?, "job": {job body}}` makes every event of that name
(`POST /v1/events`) whose data holds `match` start one job (docs/decisions/triggers.md).

- **The job** is the trigger's job body, its payload the event's data laid over the trigger's payload
  (`merged_payload`), enqueued by the event's own job in the worker, each with an id derived from the event's
  job and the trigger's name (`started_job_name`, through `ids.child_id`): an event sent twice with one id is one
  event job, whose claim runs once, and whose started jobs have the same ids however often it runs.
- **Matching** is a durable wait's (shared/durable/matching.py): each key of `match` a top-level key of the data
  with an equal value.

Pure: the trigger's name and job body, the merge, the started job's name.
"""

from __future__ import annotations

import re
from typing import Any

from shared import ids, settings
from shared.errors import InvalidRequest
from shared.flow import limits
from shared.flow.flow_key import whole_number

NAME = re.compile(rf"[A-Za-z0-9_.-]{{1,{limits.TRIGGER_NAME_MAX_LENGTH}}}")
# What a trigger's job body may not carry, and why: its id derives from the event and the trigger (so no idempotency
# key), it starts when the event comes (so no run_at; a delay_seconds of up to SQS's 15 minutes is kept), and the
# event's job sends it straight to the queue, one per event (so no debounce group or unique key, which the API's
# enqueue writes to the store).
_NOT_IN_A_TRIGGERS_JOB = {
    "idempotency_key": "its id derives from the event",
    "run_at": "it starts when its event comes",
    "debounce": "it starts once per event, sent by the event's job",
    "unique": "it starts once per event, sent by the event's job",
}
DATA_KEY = "data"  # where an event's data that is not an object goes in the started job's payload


def checked_name(value: Any, field: str = "name") -> str:
    """A trigger's name: 1 to TRIGGER_NAME_MAX_LENGTH letters, digits, `_`, `.` or `-` (it is in a URL path)."""
    if not isinstance(value, str) or not NAME.fullmatch(value):
        most = limits.TRIGGER_NAME_MAX_LENGTH
        raise InvalidRequest(field, f"must be 1 to {most} letters, digits, '_', '.' or '-'")
    return value


def checked_job(value: Any, field: str = "job") -> dict[str, Any]:
    """A trigger's job body, as far as a trigger adds rules to a job's (the enqueue's own checks follow): an object,
    its payload an object or null (the event's data is laid over it), no idempotency_key, run_at, debounce or
    unique, and a delay_seconds within SQS's 15 minutes."""
    if not isinstance(value, dict):
        raise InvalidRequest(field, "must be a job body: an object with its type")
    for name, why in _NOT_IN_A_TRIGGERS_JOB.items():
        if value.get(name) is not None:
            raise InvalidRequest(f"{field}.{name}", f"a trigger's job takes none: {why}")
    if value.get("payload") is not None and not isinstance(value["payload"], dict):
        raise InvalidRequest(f"{field}.payload", "must be an object (or null): the event's data is laid over it")
    if value.get("delay_seconds") is not None:
        whole_number(value["delay_seconds"], f"{field}.delay_seconds", 0, settings.MAX_SQS_DELAY_SECONDS)
    return value


def merged_payload(payload: dict[str, Any] | None, data: Any) -> dict[str, Any] | None:
    """The started job's payload: the event's data laid over the trigger's payload, its keys winning. Data that is
    not an object goes under `data`; no data leaves the trigger's payload as it is."""
    if data is None:
        return payload
    if isinstance(data, dict):
        return (payload or {}) | data
    return (payload or {}) | {DATA_KEY: data}


def event_job_key(event_id: str) -> str:
    """The idempotency key of an event's job (shared/waits/sending.py): the event's id, apart from a customer's own
    keys. Its job's id is `ids.keyed_id` of it, and the ids of the jobs it starts derive from that."""
    return f"event:{event_id}"


def started_job_id(secret: bytes, tenant: str, event_id: str, trigger: str) -> str:
    """The id of the job `trigger` starts for the tenant's event `event_id`: the same on every run of the event's
    job, however often the event is sent, so the claim runs it once; a job message's `started_by` is checked
    against it (shared/model/lineage.py)."""
    event_job = ids.keyed_id(secret, tenant, event_job_key(event_id))
    return ids.child_id(secret, tenant, event_job, started_job_name(trigger))


def started_job_name(trigger: str) -> str:
    """The name the started job's id derives from, beside its event's job (`ids.child_id`): one per trigger, apart
    from a batch's members ("0", "1", ...) and callbacks ("on_success", ...), which never hold a colon."""
    return f"trigger:{trigger}"
