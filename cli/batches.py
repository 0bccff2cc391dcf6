"""`corral batches create|get|list|cancel` over the API: jobs counted as one, with callbacks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli import render
from cli.common import CliError, Exit, JsonFlag, corral
from cli.jobs import parse_payload, read_jobs

app = typer.Typer(no_args_is_help=True)

BatchArgument = Annotated[str, typer.Argument(help="The batch's id.")]
CallbackOption = Annotated[
    str | None,
    typer.Option(help='A job body, JSON or @file, e.g. \'{"type": "http", "payload": {"url": ...}}\'.'),
]
STATUS_STYLES = {"running": "yellow", "succeeded": "green", "completed_with_failures": "bold red", "cancelled": "dim"}


def _callback(raw: str | None, option: str) -> dict[str, Any] | None:
    body = parse_payload(raw)
    if body is not None and not isinstance(body, dict):
        raise CliError(f'{option} is a job body: a JSON object like {{"type": ...}}', Exit.USAGE, "bad_callback")
    return body


def _status(value: str | None) -> str:
    value = value or "-"
    return f"[{STATUS_STYLES.get(value, 'white')}]{value}[/]"


def _show(batch: dict[str, Any]) -> None:
    shown = dict(batch)
    shown["status"] = _status(batch.get("status"))
    for name in ("created_at", "finished_at", "cancelled_at"):
        if name in shown:
            shown[name] = render.when(shown[name])
    render.fields(f"batch {batch.get('id')}", shown)


@app.command()
def create(
    from_file: Annotated[Path, typer.Argument(help="Job bodies: a JSON Lines file or a JSON array; '-' for stdin.")],
    job_type: Annotated[str | None, typer.Option("--type", help="The type of jobs that give none.")] = None,
    on_complete: CallbackOption = None,
    on_success: CallbackOption = None,
    description: Annotated[str | None, typer.Option(help="What the batch is, for people.")] = None,
    idempotency_key: Annotated[str | None, typer.Option(help="The same key is the same batch.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Enqueue up to 1,000 jobs as one batch; prints its id. --on-complete runs once they have all ended,
    --on-success once they all succeeded."""
    created = corral().batches.create(
        read_jobs(from_file, job_type),
        on_complete=_callback(on_complete, "--on-complete"),
        on_success=_callback(on_success, "--on-success"),
        description=description,
        idempotency_key=idempotency_key,
    )
    render.emit(created, as_json, lambda: render.out.print(created["id"]))


@app.command()
def get(batch_id: BatchArgument, as_json: JsonFlag = False) -> None:
    """A batch's status, counts and callbacks."""
    found = dict(corral().batches.get(batch_id))
    render.emit(found, as_json, lambda: _show(found))


@app.command("list")
def list_batches(
    status: Annotated[
        str | None, typer.Option(help="running, succeeded, completed_with_failures or cancelled.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Show at most this many (newest first).")] = 20,
    as_json: JsonFlag = False,
) -> None:
    """This tenant's batches, newest first."""
    found = list(corral().batches.list(status=status, max_items=limit))
    if as_json:
        render.emit_json({"batches": found})
        return
    rows = [
        [
            batch["id"],
            _status(batch["status"]),
            f"{batch['total'] - batch['pending']}/{batch['total']}",
            batch["succeeded"],
            batch["dead"],
            batch["cancelled"],
            render.when(batch.get("created_at")),
            batch.get("description") or "",
        ]
        for batch in found
    ]
    columns = ["id", "status", "ended", "succeeded", "dead", "cancelled", "created", "description"]
    render.table(None, columns, rows)


@app.command()
def cancel(batch_id: BatchArgument, as_json: JsonFlag = False) -> None:
    """Cancel a batch: its jobs that have not started are cancelled, and it runs no callback."""
    found = dict(corral().batches.cancel(batch_id))
    render.emit(found, as_json, lambda: render.out.print(f"{found['id']} {_status(found['status'])}"))
