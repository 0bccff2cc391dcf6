"""`corral schedules list|create|get|update|pause|resume|trigger|backfill|delete` over the API."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from cli import render
from cli.common import JsonFlag, corral
from cli.flow import DebounceOption, ThrottleOption, UniqueOption, flow_options
from cli.jobs import PayloadOption, parse_payload

app = typer.Typer(no_args_is_help=True)

NameArgument = Annotated[str, typer.Argument(help="The schedule's name (unique per tenant).")]


class OverlapChoice(StrEnum):
    allow = "allow"
    skip = "skip"


OverlapOption = Annotated[
    OverlapChoice | None,
    typer.Option(help="skip: a run whose earlier run is still queued, running or retrying is skipped (default allow)."),
]
DescriptionOption = Annotated[str | None, typer.Option(help="What the schedule is for.")]


def _show(schedule: dict[str, Any], as_json: bool) -> None:
    if as_json:
        render.emit_json(schedule)
    else:
        render.fields(f"schedule {schedule.get('name')}", schedule)


@app.command("list")
def list_schedules(
    limit: Annotated[int | None, typer.Option(min=1, help="Show at most this many (all by default).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """This tenant's schedules, by name (every page, or the first --limit)."""
    found = list(corral().schedules.list(max_items=limit))
    if as_json:
        render.emit_json({"schedules": found})
        return
    rows = [
        [s.get("name"), s.get("expression"), s.get("timezone"), (s.get("job") or {}).get("type"), s.get("state")]
        for s in found
    ]
    render.table(None, ["name", "expression", "timezone", "job type", "state"], rows)


@app.command()
def create(
    name: NameArgument,
    expression: Annotated[str, typer.Argument(help="cron(0 2 * * ? *), rate(5 minutes) or at(2026-12-31T23:59:00).")],
    job_type: Annotated[str, typer.Argument(help="The type of the job each firing enqueues.")],
    payload: PayloadOption = None,
    timezone: Annotated[str | None, typer.Option(help="IANA time zone of the expression (default UTC).")] = None,
    max_attempts: Annotated[int | None, typer.Option(help="Attempts of each run (1-25).")] = None,
    timeout: Annotated[
        int | None, typer.Option(help="Seconds each run's attempt may take (default: its type's).")
    ] = None,
    flexible_window: Annotated[int | None, typer.Option(help="Minutes Scheduler may spread a firing over.")] = None,
    start: Annotated[str | None, typer.Option(help="First possible firing (ISO 8601).")] = None,
    end: Annotated[str | None, typer.Option(help="Last possible firing (ISO 8601).")] = None,
    overlap: OverlapOption = None,
    description: DescriptionOption = None,
    throttle: ThrottleOption = None,
    debounce: DebounceOption = None,
    unique: UniqueOption = None,
    priority: Annotated[str | None, typer.Option(help="Each run's priority: high, default or low.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a schedule: each firing enqueues one job (a debounce or unique key applies to its runs)."""
    created = corral().schedules.create(
        name,
        expression,
        job_type,
        parse_payload(payload),
        timezone=timezone,
        max_attempts=max_attempts,
        timeout_seconds=timeout,
        flexible_window_minutes=flexible_window,
        start=start,
        end=end,
        overlap=overlap,
        description=description,
        priority=priority,
        **flow_options(unique=unique, throttle=throttle, debounce=debounce),
    )
    _show(dict(created), as_json)


@app.command()
def get(name: NameArgument, as_json: JsonFlag = False) -> None:
    """A schedule and its recent runs, newest first."""
    found = dict(corral().schedules.get(name))
    if as_json:
        render.emit_json(found)
        return
    runs = found.pop("runs", [])
    render.fields(f"schedule {name}", found)
    render.table(
        "recent runs",
        ["job id", "status", "scheduled for", "trigger", "reason"],
        [
            [
                run.get("id"),
                render.status(run.get("status")),
                run.get("scheduled_for"),
                run.get("trigger"),
                run.get("reason"),
            ]
            for run in runs
        ],
    )


class Clearable(StrEnum):
    start = "start"
    end = "end"
    description = "description"
    timeout = "timeout"


@app.command()
def update(
    name: NameArgument,
    expression: Annotated[str | None, typer.Option(help="A new expression.")] = None,
    timezone: Annotated[str | None, typer.Option(help="A new IANA time zone.")] = None,
    job_type: Annotated[str | None, typer.Option("--type", help="A new job type.")] = None,
    payload: PayloadOption = None,
    max_attempts: Annotated[int | None, typer.Option(help="Attempts of each run (1-25).")] = None,
    timeout: Annotated[int | None, typer.Option(help="Seconds each run's attempt may take.")] = None,
    flexible_window: Annotated[int | None, typer.Option(help="Minutes Scheduler may spread a firing over.")] = None,
    start: Annotated[str | None, typer.Option(help="First possible firing (ISO 8601).")] = None,
    end: Annotated[str | None, typer.Option(help="Last possible firing (ISO 8601).")] = None,
    overlap: OverlapOption = None,
    description: DescriptionOption = None,
    clear: Annotated[
        list[Clearable] | None, typer.Option(help="Remove this field (start, end, description, timeout); repeatable.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Change a schedule in place: only the options given change (its name, runs and quota unit stay)."""
    changes: dict[str, Any] = {
        "expression": expression,
        "timezone": timezone,
        "flexible_window_minutes": flexible_window,
        "start": start,
        "end": end,
        "overlap": overlap,
        "description": description,
    }
    changes = {field: value for field, value in changes.items() if value is not None}
    job: dict[str, Any] = {"type": job_type, "max_attempts": max_attempts, "timeout_seconds": timeout}
    job = {field: value for field, value in job.items() if value is not None}
    if payload is not None:
        job["payload"] = parse_payload(payload)
    for field in clear or []:
        if field is Clearable.timeout:
            job["timeout_seconds"] = None
        else:
            changes[str(field)] = None
    if job:
        changes["job"] = job
    _show(dict(corral().schedules.update(name, **changes)), as_json)


@app.command()
def pause(
    name: NameArgument,
    note: Annotated[str | None, typer.Option(help="Why it is paused (shown with the schedule).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Stop a schedule firing until it is resumed (it can still be triggered)."""
    _show(dict(corral().schedules.pause(name, note=note)), as_json)


@app.command()
def resume(name: NameArgument, as_json: JsonFlag = False) -> None:
    """Let a paused schedule fire again."""
    _show(dict(corral().schedules.resume(name)), as_json)


@app.command()
def trigger(
    name: NameArgument,
    idempotency_key: Annotated[str | None, typer.Option(help="The same key triggers the same run once.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a schedule's job now, as one of its runs (skipped under overlap skip while an earlier run is live)."""
    triggered = dict(corral().schedules.trigger(name, idempotency_key=idempotency_key))
    if as_json:
        render.emit_json(triggered)
    elif triggered.get("status") == "skipped":
        render.out.print(f"skipped run {triggered.get('id')}: {triggered.get('reason')}", highlight=False)
    else:
        render.out.print(f"queued run {triggered.get('id')} of schedule {name}", highlight=False)


@app.command()
def delete(name: NameArgument, as_json: JsonFlag = False) -> None:
    """Delete a schedule (its past runs stay)."""
    corral().schedules.delete(name)
    if as_json:
        render.emit_json({"name": name, "deleted": True})
    else:
        render.out.print(f"deleted schedule {name}")


@app.command()
def backfill(
    name: NameArgument,
    start: Annotated[str, typer.Option(help="The first firing time included (ISO 8601).")],
    end: Annotated[str, typer.Option(help="Firing times before this (ISO 8601; at the latest now).")],
    as_json: JsonFlag = False,
) -> None:
    """Run a schedule's firings of a past window now (at most 1,000); repeating it runs nothing twice."""
    backfilled = corral().schedules.backfill(name, start, end)
    if as_json:
        render.emit_json({"runs": backfilled})
        return
    render.table(
        f"{len(backfilled)} runs queued",
        ["job id", "scheduled for"],
        [[r["id"], r["scheduled_for"]] for r in backfilled],
    )
