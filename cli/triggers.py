"""`corral triggers list|create|get|delete` over the API: events that start jobs (docs/decisions/triggers.md)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from cli import render
from cli.common import JsonFlag, corral
from cli.jobs import PayloadOption, parse_payload

app = typer.Typer(no_args_is_help=True)

NameArgument = Annotated[str, typer.Argument(help="The trigger's name (unique per tenant).")]


def _show(trigger: dict[str, Any], as_json: bool) -> None:
    if as_json:
        render.emit_json(trigger)
    else:
        render.fields(f"trigger {trigger.get('name')}", trigger)


@app.command("list")
def list_triggers(
    limit: Annotated[int | None, typer.Option(min=1, help="Show at most this many (all by default).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """This tenant's triggers, by name (every page, or the first --limit)."""
    found = list(corral().triggers.list(max_items=limit))
    if as_json:
        render.emit_json({"triggers": found})
        return
    rows = [
        [
            t.get("name"),
            t.get("event"),
            json.dumps(t.get("match")) if t.get("match") else "-",
            (t.get("job") or {}).get("type"),
        ]
        for t in found
    ]
    render.table(None, ["name", "event", "match", "job type"], rows)


@app.command()
def create(
    name: NameArgument,
    event: Annotated[str, typer.Argument(help="The event name it starts a job on (POST /v1/events's name).")],
    job_type: Annotated[str, typer.Argument(help="The type of the job each matching event starts.")],
    payload: PayloadOption = None,
    match: Annotated[
        str | None,
        typer.Option(help='JSON object the event\'s data must hold at its top level, e.g. \'{"plan": "pro"}\'.'),
    ] = None,
    max_attempts: Annotated[int | None, typer.Option(help="Attempts of each started job (1-25).")] = None,
    timeout: Annotated[int | None, typer.Option(help="Seconds each attempt may take (default: its type's).")] = None,
    delay: Annotated[
        int | None, typer.Option("--delay", help="Start each job this many seconds after its event.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a trigger: each event of its name whose data holds --match starts one job, its payload the event's
    data laid over --payload."""
    created = corral().triggers.create(
        name,
        event,
        job_type,
        parse_payload(payload),
        match=parse_payload(match, "--match"),
        max_attempts=max_attempts,
        timeout_seconds=timeout,
        delay_seconds=delay,
    )
    _show(dict(created), as_json)


@app.command()
def get(name: NameArgument, as_json: JsonFlag = False) -> None:
    """A trigger: its event, match and job."""
    _show(dict(corral().triggers.get(name)), as_json)


@app.command()
def delete(name: NameArgument, as_json: JsonFlag = False) -> None:
    """Delete a trigger (the jobs it started stay)."""
    corral().triggers.delete(name)
    if as_json:
        render.emit_json({"name": name, "deleted": True})
    else:
        render.out.print(f"deleted trigger {name}")
