"""Sending an event (`POST /v1/events`): one enqueue of a job of the built-in type `event`, under an idempotency
key the event's id makes, so the same id sent twice is one event, resumed once. The API's half: the worker's
(the `event` job) is shared/waits/events.py.

The tenant's rate limit counts the event as a job, and one more for each trigger its name's directory lists:
each starts a job when the event runs (shared/waits/triggers.py), so an event costs what it can start. The
event's own unit is taken before the directory is read: a tenant over its limit costs the store no read. While
the store does not answer, the event counts one and is sent: sending needs no store, as an enqueue needs none.
"""

from __future__ import annotations

import secrets
from typing import Any

from shared.flow import triggers
from shared.jobs.enqueue import JobRequest, enqueue
from shared.model.spec import JobSpec
from shared.store.flow import trigger_items
from shared.tenants import rate_limit
from shared.waits.events import EVENT_JOB_TYPE, checked


def send(tenant: str, name: str, data: Any = None, event_id: str | None = None) -> str:
    """Send the tenant's event: its id (the one given, or a fresh one). InvalidRequest naming a bad field,
    RateLimited over the tenant's rate (then nothing is sent; its own unit may be spent), Conflict for an id
    sent before with other content."""
    checked(name, data, event_id)
    rate_limit.check(tenant)
    if starts := trigger_items.listed(tenant, name):
        rate_limit.check(tenant, starts)
    event_id = event_id if event_id is not None else "ev_" + secrets.token_hex(12)
    payload = {"name": name, "id": event_id, "data": data}
    request = JobRequest(JobSpec(EVENT_JOB_TYPE, payload), idempotency_key=triggers.event_job_key(event_id))
    enqueue(tenant, request, counted=True)
    return event_id
