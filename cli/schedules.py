"""`corral schedules list|create|get|delete` over the API."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import render
from cli.common import JsonFlag, corral
from cli.jobs import PayloadOption, parse_payload

app = typer.Typer(no_args_is_help=True)

NameArgument = Annotated[str, typer.Argument(help="The schedule's name (unique per tenant).")]


@app.command("list")
def list_schedules(
    limit: Annotated[int | None, typer.Option(min=1, help="Show at most this many (all by default).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """This tenant's schedules, by name (every page, or the first --limit)."""
    found = corral().schedules.list(max_items=limit)
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
    as_json: JsonFlag = False,
) -> None:
    """Create a schedule: each firing enqueues one job."""
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
    )
    if as_json:
        render.emit_json(created)
    else:
        render.fields(f"schedule {created.get('name')}", dict(created))


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
        ["job id", "status", "scheduled for"],
        [[run.get("id"), render.status(run.get("status")), run.get("scheduled_for")] for run in runs],
    )


@app.command()
def delete(name: NameArgument, as_json: JsonFlag = False) -> None:
    """Delete a schedule (its past runs stay)."""
    corral().schedules.delete(name)
    if as_json:
        render.emit_json({"name": name, "deleted": True})
    else:
        render.out.print(f"deleted schedule {name}")
