"""Event triggers (docs/decisions/triggers.md): a tenant's standing rule "an event of this name, whose data holds
`match`, starts this job". Created, listed, read and deleted through the API; applied by the event's own job in
the worker (shared/waits/events.py `send`), so an accepted event starts every matching trigger's job even when a
worker dies midway: the event's job is retried, and each started job's id derives from the event's job and the
trigger's name, so a retry, or the same event id sent again, starts nothing twice (the claim runs an id once).

Each trigger holds a unit of the tenant's `max_triggers` quota (shared/tenants/quotas.py).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from shared import cursors, settings
from shared.aws import queue
from shared.durable import matching
from shared.errors import Conflict, InvalidRequest, NotFound, Unavailable
from shared.flow import triggers as rules
from shared.jobs import enqueue
from shared.jobs.enqueue import JobRequest
from shared.model.message import JobMessage
from shared.store.flow import trigger_items
from shared.store.id_secret import id_secret
from shared.tenants import quotas, rate_limit

logger = logging.getLogger(__name__)

# The fields of a trigger's job: a POST /v1/jobs body's, less what rules.checked_job refuses.
_JOB_FIELDS = frozenset(
    ("type", "payload", "max_attempts", "timeout_seconds", "delay_seconds", "concurrency", "on_success", "on_failure")
) | {"throttle", "debounce", "unique", "priority", "idempotency_key", "run_at"}


class TriggerExists(Conflict):
    def __init__(self, name: str) -> None:
        super().__init__(f"a trigger named {name!r} exists; delete it first", field="name")


class TriggerNotFound(NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"no trigger {name!r}")


def view(trigger: Mapping[str, Any]) -> dict[str, Any]:
    """A trigger as the API answers it."""
    return {name: trigger[name] for name in ("name", "event", "match", "job", "created_at")}


def checked(tenant: str, name: Any, event: Any, match: Any, job: Any, now: float) -> dict[str, Any]:
    """The trigger a request asks for, every field checked (its job as POST /v1/jobs checks one, naming
    `job.<field>`); InvalidRequest naming the first field at fault."""
    rules.checked_name(name)
    if (problem := matching.name_problem(event)) is not None:
        raise InvalidRequest("event", problem)
    kept_match, problem = matching.checked_match(match)
    if problem is not None:
        raise InvalidRequest("match", problem)
    body = rules.checked_job(job)
    if unknown := sorted(set(body) - _JOB_FIELDS):
        raise InvalidRequest(f"job.{unknown[0]}", "not a field of a job")
    if not isinstance(body.get("type"), str):
        raise InvalidRequest("job.type", "a trigger's job needs its type")
    enqueue.checked(tenant, JobRequest.from_fields(body), now, field_prefix="job.")
    return {"name": name, "event": event, "match": kept_match or None, "job": body}


def create(tenant: str, name: Any, event: Any, match: Any, job: Any) -> dict[str, Any]:
    """Create the tenant's trigger: its view. InvalidRequest naming a bad field, TriggerExists for a name taken,
    QuotaExceeded at max_triggers, RateLimited over the tenant's rate (a create counts one); nothing kept then.

    Listed in its event's directory before it is put and again after: with `delete`'s re-check, a trigger is in
    its directory whatever a create and a delete of the name do at once (trigger_items's docstring)."""
    now = time.time()
    trigger = checked(tenant, name, event, match, job, now)
    rate_limit.check(tenant)
    trigger_items.list_in_directory(tenant, trigger["event"], trigger["name"])
    if not quotas.take(tenant, quotas.TRIGGERS, trigger_items.as_item(tenant, trigger, now)):
        raise TriggerExists(trigger["name"])
    trigger_items.list_in_directory(tenant, trigger["event"], trigger["name"])
    return view(trigger | {"created_at": now})


def get(tenant: str, name: str) -> dict[str, Any]:
    """The tenant's trigger `name`: its view, or TriggerNotFound."""
    found = trigger_items.get(tenant, name) if rules.NAME.fullmatch(name) else None
    if found is None:
        raise TriggerNotFound(name)
    return view(found)


def delete(tenant: str, name: str) -> None:
    """Delete the tenant's trigger `name`, giving its unit back; TriggerNotFound if there is none."""
    found = get(tenant, name)
    rate_limit.check(tenant)
    if not quotas.give_back(tenant, quotas.TRIGGERS, trigger_items.key_of(tenant, name)):
        raise TriggerNotFound(name)
    trigger_items.unlist_from_directory(tenant, found["event"], name)
    again = trigger_items.get(tenant, name)  # created again meanwhile, on the same event: keep it listed
    if again is not None and again["event"] == found["event"]:
        trigger_items.list_in_directory(tenant, found["event"], name)


@dataclass(frozen=True)
class TriggerPage:
    triggers: list[dict[str, Any]]
    next_cursor: str | None


_CURSORS = cursors.Codec("t1", rules.NAME)


def list_page(tenant: str, limit: int = settings.LIST_DEFAULT_LIMIT, cursor: str | None = None) -> TriggerPage:
    """Up to `limit` of the tenant's triggers by name, after the cursor's; next_cursor if more may follow."""
    found, more = trigger_items.page(tenant, limit, _CURSORS.decode(cursor) if cursor is not None else None)
    more = more and len(found) == limit
    return TriggerPage([view(trigger) for trigger in found], _CURSORS.encode(found[-1]["name"]) if more else None)


# The event's side, in the worker ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Started:
    """What an event's triggers did: the jobs started (one per matching trigger), and the triggers whose job could
    not be (its payload, with the event's data laid over it, fails its type's checks): {"trigger", "field",
    "message"} each."""

    jobs: list[str]
    not_started: list[dict[str, str]]


def started_job(
    tenant: str, trigger: Mapping[str, Any], event: Mapping[str, Any], now: float
) -> tuple[JobMessage, int]:
    """The message of the job `trigger` starts for the event (its name, id and data) and its SQS delay; InvalidRequest
    if the merged job fails a job's checks. Its id derives from the event's id and the trigger's name, as the
    worker checks its `started_by` (so an `event` job enqueued by hand, under another key, starts the same ids)."""
    request = JobRequest.from_fields(trigger["job"])
    payload = rules.merged_payload(request.spec.payload, event.get("data"))
    request = replace(request, spec=replace(request.spec, payload=payload))
    job = enqueue.checked(tenant, request, now, field_prefix="job.")
    job_id = rules.started_job_id(id_secret(), tenant, event["id"], trigger["name"])
    started_by = {"trigger": trigger["name"], "event": event["id"]}
    message = enqueue.message_of(tenant, request, job, job_id, now, started_by=started_by)
    return message, math.ceil(job.delay)


def start_jobs(tenant: str, event: Mapping[str, Any], now: float) -> Started:
    """Start one job for each of the tenant's triggers on the event's name whose match its data holds. Idempotent:
    run again (the event's job retried), it sends the same ids, which the claim runs once. Unavailable if a send
    fails: the event's job fails and is retried, so none of them is lost."""
    prepared: list[tuple[JobMessage, int]] = []
    not_started: list[dict[str, str]] = []
    for trigger in trigger_items.on_event(tenant, event["name"]):
        if not matching.matches(trigger["match"] or {}, event.get("data")):
            continue
        try:
            prepared.append(started_job(tenant, trigger, event, now))
        except InvalidRequest as error:
            logger.warning("trigger %r: event %r starts no job: %s", trigger["name"], event["id"], error)
            not_started.append({"trigger": trigger["name"], "field": error.field, "message": error.message})
    problems = [problem for problem in queue.send_batch(prepared) if problem is not None] if prepared else []
    if problems:
        raise Unavailable(f"{len(problems)} of the event's {len(prepared)} triggered jobs were not sent: {problems[0]}")
    return Started([message.id for message, _ in prepared], not_started)
