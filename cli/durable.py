"""`corral events send` and `corral tokens complete` over the API: what resumes a waiting durable job
(docs/guides/durable-jobs.md). `corral get` shows a durable job's steps and wait (render.durable_view)."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import render
from cli.common import JsonFlag, corral
from cli.jobs import parse_payload

events = typer.Typer(no_args_is_help=True)
tokens = typer.Typer(no_args_is_help=True)

DataOption = Annotated[
    str | None, typer.Option("--data", "-d", help="JSON, or @file to read JSON from a file (default: null).")
]


@events.command()
def send(
    name: Annotated[str, typer.Argument(help="The event's name, e.g. payment.received.")],
    data: DataOption = None,
    event_id: Annotated[
        str | None, typer.Option("--id", help="The event's own id: the same id sent twice is one event.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Send an event: every waiting job of this tenant whose wait names it, and whose match its data holds,
    resumes with its data. Prints the event's id."""
    sent = corral().events.send(name, parse_payload(data, "--data"), id=event_id)
    render.emit({"id": sent}, as_json, lambda: render.out.print(sent, highlight=False))


@tokens.command()
def complete(
    token_id: Annotated[str, typer.Argument(help="The token's id (create_token's `id`).")],
    data: DataOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Complete a token: the job waiting for it resumes with the data. Once only: a second completion, an
    expired token or a cancelled job's exits 4 (conflict)."""
    answer = corral().tokens.complete(token_id, parse_payload(data, "--data"))
    render.emit(answer, as_json, lambda: render.out.print(f"{answer['id']} {answer['status']}", highlight=False))


def register(app: typer.Typer) -> None:
    app.add_typer(events, name="events", help="Events that resume waiting durable jobs.")
    app.add_typer(tokens, name="tokens", help="Tokens that durable jobs wait for.")
