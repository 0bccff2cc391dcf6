"""How results reach the terminal: rich tables for people, `--json` for scripts (stdout, one document)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

STATUS_STYLES = {
    "queued": "cyan",
    "running": "yellow",
    "succeeded": "green",
    "failed": "magenta",
    "dead": "bold red",
    "cancelled": "dim",
    "skipped": "dim",
}


def emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")


def emit(document: Any, as_json: bool, show: Callable[[], None]) -> None:
    """The document as JSON (--json), else as `show` prints it for a person."""
    if as_json:
        emit_json(document)
    else:
        show()


def when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")


def status(value: str | None) -> str:
    value = value or "-"
    return f"[{STATUS_STYLES.get(value, 'white')}]{value}[/]"


def table(title: str | None, columns: list[str], rows: list[list[Any]], caption: str | None = None) -> None:
    grid = Table(title=title, caption=caption, header_style="bold", title_justify="left")
    for column in columns:
        grid.add_column(column, overflow="fold")
    for row in rows:
        grid.add_row(*("-" if cell is None else str(cell) for cell in row))
    out.print(grid)


def fields(title: str, values: dict[str, Any]) -> None:
    """A two-column view of one object (a job, a schedule)."""
    grid = Table(title=title, show_header=False, title_justify="left")
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    for name, value in values.items():
        if isinstance(value, dict | list):
            value = json.dumps(value, indent=2)
        grid.add_row(name, "-" if value is None else str(value))
    out.print(grid)


def job_view(job: dict[str, Any]) -> None:
    shown = dict(job)
    shown["status"] = status(job.get("status"))
    for name in ("enqueued_at", "started_at", "finished_at", "cancelled_at"):
        if name in shown:
            shown[name] = when(shown[name])
    fields(f"job {job.get('id')}", shown)
