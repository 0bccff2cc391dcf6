"""Events (docs/decisions/durable-jobs.md "Events, and the race with a wait"): `POST /v1/events` enqueues a job
of the built-in type `event`, whose id derives from the tenant and the event's id (the same id sent twice is
one event, run once), and that job, in the worker, logs the event on its name's channel and resumes every
waiting job of its tenant whose match its data holds, and starts a job for each of its tenant's triggers on the
event's name whose match its data holds (docs/decisions/triggers.md).
"""

from __future__ import annotations

import json
import time
from typing import Any

from shared.durable import limits, matching, steps
from shared.errors import InvalidRequest, PayloadTooLarge
from shared.jobs.registry import InvalidPayload, JobContext, builtin_job_type
from shared.store.durable import event_items
from shared.waits import resume, triggers

EVENT_JOB_TYPE = "event"


def checked(name: object, data: Any, event_id: object) -> None:
    """InvalidRequest naming the field of an event that cannot be sent."""
    if (problem := matching.name_problem(name)) is not None:
        raise InvalidRequest("name", problem)
    if event_id is not None and (not isinstance(event_id, str) or not 1 <= len(event_id) <= limits.MAX_EVENT_ID_CHARS):
        raise InvalidRequest("id", f"must be a string of 1 to {limits.MAX_EVENT_ID_CHARS} characters")
    size = len(json.dumps(data, separators=(",", ":")).encode())
    if size > limits.MAX_STEP_RESULT_BYTES:
        raise PayloadTooLarge("data", f"is {size} bytes, over the limit of {limits.MAX_STEP_RESULT_BYTES}")


def _check_payload(payload: Any) -> None:
    if not isinstance(payload, dict) or set(payload) - {"name", "id", "data"} or "id" not in payload:
        raise InvalidPayload("payload", "an event job's payload is {name, id, data}")
    try:
        checked(payload.get("name"), payload.get("data"), payload["id"])
    except InvalidRequest as error:
        raise InvalidPayload(f"payload.{error.field}", error.message) from error


@builtin_job_type(EVENT_JOB_TYPE, validate=_check_payload)
def send(payload: Any, context: JobContext) -> dict[str, Any]:
    """Log the event, resume the waits it matches and start its triggers' jobs (shared/waits/triggers.py):
    {"event", "resumed": [job ids], "started": [job ids], "not_started"?: [why, per trigger]}. Repeated (a retry),
    it logs the event again, resumes nothing twice (a step is resolved once) and starts the same ids again (the
    claim runs each once)."""
    _check_payload(payload)
    name, event_id, data = payload["name"], payload["id"], payload.get("data")
    now = time.time()
    _seq, waiters = event_items.send(context.tenant, name, event_id, data, now)
    resumed = []
    data_json = json.dumps(data, separators=(",", ":"))
    for waiter in waiters:
        change = steps.Resolved(awaits="event", by=event_id, result_json=data_json)
        if resume.resolve(waiter.job_id, context.tenant, waiter.step, change, now):
            resumed.append(waiter.job_id)
        event_items.unregister(context.tenant, name, waiter)
    started = triggers.start_jobs(context.tenant, payload, now)
    answer: dict[str, Any] = {"event": event_id, "resumed": resumed, "started": started.jobs}
    if started.not_started:
        answer["not_started"] = started.not_started
    return answer
