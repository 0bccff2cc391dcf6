"""What a customer's schedule does (its `Definition`, shared/store/schedules/schedule_items.py), checked field by field:
as a create writes it (`definition`) and as an update changes it (`changed`). `InvalidRequest` names the
first wrong field, and nothing is written.

Applying a definition (the record's states, EventBridge Scheduler) is shared/schedules/lifecycle.py's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from shared import settings
from shared.errors import InvalidRequest
from shared.flow import options as flow_options
from shared.flow.options import FlowOptions
from shared.jobs import job_types, payloads
from shared.jobs.enqueue import check_job, with_max_attempts
from shared.model.spec import JobSpec
from shared.model.states import Overlap
from shared.schedules import expressions
from shared.schedules.expressions import InvalidExpression, parse, timezone
from shared.store.schedules.schedule_items import Definition

NAME = re.compile(rf"[A-Za-z0-9_.-]{{1,{settings.SCHEDULE_NAME_MAX_LENGTH}}}")


@dataclass(frozen=True)
class ScheduleRequest:
    name: str
    expression: str
    job: JobSpec  # what each firing runs; a max_attempts of None: the job type's default
    timezone: str = "UTC"
    flexible_window_minutes: int = 0
    start: datetime | None = None
    end: datetime | None = None
    overlap: str = Overlap.ALLOW
    description: str | None = None
    # Its runs' own flow options, as the body gives them (shared/flow/options.py): each firing's job carries them.
    throttle: Mapping[str, Any] | None = None
    debounce: Mapping[str, Any] | None = None
    unique: Mapping[str, Any] | None = None
    priority: str | None = None

    @property
    def flow(self) -> dict[str, Any]:
        """Its flow options given, by name."""
        return {name: getattr(self, name) for name in flow_options.FIELDS if getattr(self, name) is not None}


def _aware(value: datetime | None) -> datetime | None:
    return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)


def _check_expression(expression_text: str, zone_name: str, now: datetime) -> None:
    try:
        zone = timezone(zone_name)
    except InvalidExpression as error:
        raise InvalidRequest("timezone", str(error)) from error
    try:
        expression = parse(expression_text)
    except InvalidExpression as error:
        raise InvalidRequest("expression", str(error)) from error
    if expression.at is not None and expression.at.replace(tzinfo=zone) <= now:
        raise InvalidRequest("expression", f"{expression_text} ({zone_name}) is in the past")


def _job_of(tenant: str, spec: JobSpec, flow: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The record's job: checked as any job a schedule fires, its max_attempts decided; its own flow options
    (throttle, debounce, unique, priority), if given, checked alone and together, each named `job.<option>`."""
    check_job(spec, tenant=tenant, field_prefix="job.", scheduler_input=True)
    spec = with_max_attempts(spec)
    job: dict[str, Any] = {"type": spec.type, "payload": spec.payload, "max_attempts": spec.max_attempts}
    if spec.timeout_seconds is not None:
        job["timeout_seconds"] = spec.timeout_seconds
    options = flow_options.parse(flow or {}, field_prefix="job.")
    for name in ("throttle", "debounce", "unique"):
        keyed = getattr(options, name)
        # Its key travels in Scheduler's Input, which would substitute a Scheduler keyword in it at each firing.
        if keyed is not None and payloads.SCHEDULER_KEYWORD in keyed.key.lower():
            raise InvalidRequest(f"job.{name}.key", f"may not contain {payloads.SCHEDULER_KEYWORD!r}")
    flow_options.check_together(options, field_prefix="job.")
    if options.priority is not None:
        job["priority"] = str(options.priority)  # as given: its view shows it, the default level too
    return job | {name: value for name, value in options.to_dict().items() if name != "priority"}


def spec_of(job: Mapping[str, Any]) -> tuple[JobSpec, FlowOptions]:
    """A record's job as its runs' spec, and their own flow options (each unset one: their type's, if any, for a
    throttle and the priority; none of the others)."""
    spec = JobSpec(**{name: value for name, value in job.items() if name not in flow_options.FIELDS})
    flow = flow_options.parse(job)
    # Its runs' lane: their own priority, else their type's (the queue a run is sent to is chosen as it is sent).
    return spec, dataclasses.replace(flow, priority=job_types.priority_of(spec.type, flow.priority))


def _check_window(minutes: int) -> None:
    if not 0 <= minutes <= settings.MAX_FLEXIBLE_WINDOW_MINUTES:
        raise InvalidRequest(
            "flexible_window_minutes", f"must be between 0 (off) and {settings.MAX_FLEXIBLE_WINDOW_MINUTES}"
        )


def _check_start(start: datetime, now: datetime) -> None:
    if start < now - timedelta(seconds=settings.SCHEDULE_START_GRACE_SECONDS):
        grace = settings.SCHEDULE_START_GRACE_SECONDS // 60
        raise InvalidRequest("start", f"must be no earlier than {grace} minutes ago (leave it out to start now)")


def _check_end(end: datetime, now: datetime) -> None:
    if end <= now:
        raise InvalidRequest("end", "must be in the future")


def _check_bounds(start: datetime | None, end: datetime | None, field: str = "end") -> None:
    if start is not None and end is not None and end <= start:
        raise InvalidRequest(field, "must be after start" if field == "end" else "must be before end")


def _check_overlap(overlap: str) -> None:
    if overlap not in tuple(Overlap):
        raise InvalidRequest("overlap", f"must be one of {', '.join(Overlap)}")


def check_text(field: str, text: str | None) -> None:
    if text is not None and len(text) > settings.SCHEDULE_TEXT_MAX_LENGTH:
        raise InvalidRequest(field, f"must be at most {settings.SCHEDULE_TEXT_MAX_LENGTH} characters")


def definition(tenant: str, request: ScheduleRequest, now: datetime) -> Definition:
    """The definition a create writes, every field checked (InvalidRequest names the first wrong one)."""
    if not NAME.fullmatch(request.name):
        raise InvalidRequest("name", f"use 1-{settings.SCHEDULE_NAME_MAX_LENGTH} of A-Z a-z 0-9 _ . -")
    _check_expression(request.expression, request.timezone, now)
    job = _job_of(tenant, request.job, request.flow)
    _check_window(request.flexible_window_minutes)
    start, end = _aware(request.start), _aware(request.end)
    if start is not None:
        _check_start(start, now)
    if end is not None:
        _check_end(end, now)
    _check_bounds(start, end)
    _check_overlap(request.overlap)
    check_text("description", request.description)
    return Definition(
        expression=request.expression.strip(),
        timezone=request.timezone,
        job=job,
        flexible_window_minutes=request.flexible_window_minutes,
        start=start,
        end=end,
        overlap=Overlap(request.overlap),
        description=request.description,
        firings_per_hour=expressions.firings_per_hour(request.expression),
    )


CHANGEABLE = frozenset(
    {"expression", "timezone", "job", "flexible_window_minutes", "start", "end", "overlap", "description"}
)
_JOB_FIELDS = frozenset({"type", "payload", "max_attempts", "timeout_seconds", *flow_options.FIELDS})


def changed(tenant: str, current: Definition, changes: Mapping[str, Any], now: datetime) -> Definition:
    """`current` with `changes` applied (a field given as None is cleared: start, end, description, a job's
    timeout_seconds), each change checked; InvalidRequest names the first wrong field, changing nothing.

    Only what changes is checked against the clock: a schedule whose start has passed may still change
    its payload, and an at() that fired may still change its description."""
    unknown = set(changes) - CHANGEABLE
    if unknown:
        raise InvalidRequest(sorted(unknown)[0], f"cannot be changed; changeable: {', '.join(sorted(CHANGEABLE))}")
    expression = changes.get("expression", current.expression)
    zone = changes.get("timezone", current.timezone)
    if expression is None or zone is None:
        raise InvalidRequest("expression" if expression is None else "timezone", "cannot be cleared")
    if "expression" in changes or "timezone" in changes:
        _check_expression(expression, zone, now)
    job = current.job
    if "job" in changes:
        given = changes["job"] or {}
        if set(given) - _JOB_FIELDS:
            raise InvalidRequest(f"job.{sorted(set(given) - _JOB_FIELDS)[0]}", "is not a field of a job")
        merged = {**current.job, **given}
        if not merged.get("type"):
            raise InvalidRequest("job.type", "cannot be cleared")
        spec_fields = {name: merged.get(name) for name in _JOB_FIELDS if name not in flow_options.FIELDS}
        flow = {name: merged[name] for name in flow_options.FIELDS if merged.get(name) is not None}
        job = _job_of(tenant, JobSpec(**spec_fields), flow)
    window = changes.get("flexible_window_minutes", current.flexible_window_minutes)
    if window is None:
        window = 0
    _check_window(window)
    start = _aware(changes["start"]) if "start" in changes else current.start
    end = _aware(changes["end"]) if "end" in changes else current.end
    if "start" in changes and start is not None:
        _check_start(start, now)
    if "end" in changes and end is not None:
        _check_end(end, now)
    _check_bounds(start, end, "end" if "end" in changes else "start")
    overlap = changes.get("overlap", current.overlap) or Overlap.ALLOW
    _check_overlap(overlap)
    description = changes.get("description", current.description)
    check_text("description", description)
    return current.changed(
        expression=expression.strip(),
        timezone=zone,
        job=job,
        flexible_window_minutes=window,
        start=start,
        end=end,
        overlap=Overlap(overlap),
        description=description,
        firings_per_hour=expressions.firings_per_hour(expression),
    )
