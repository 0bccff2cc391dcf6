"""How results reach the terminal: rich tables for people (`--output table`, the default), one JSON or
YAML document on stdout for scripts (`--output json|yaml`; `--json` is `--output json`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

OUTPUTS = ("table", "json", "yaml")
_output = {"chosen": "table"}

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

STATUS_STYLES = {
    "queued": "cyan",
    "running": "yellow",
    "waiting": "blue",
    "succeeded": "green",
    "failed": "magenta",
    "dead": "bold red",
    "cancelled": "dim",
    "skipped": "dim",
}


def choose_output(output: str) -> None:
    """`--output` (json, yaml or table), for every command of this run."""
    _output["chosen"] = output


def for_scripts() -> bool:
    """Whether this run prints one document (`--output json|yaml`) instead of tables."""
    return _output["chosen"] != "table"


def emit_json(document: Any) -> None:
    """The document on stdout, as `--output` asks: JSON (also under `--json`), or YAML."""
    text = json.dumps(document, indent=2, default=str)
    if _output["chosen"] == "yaml":
        text = yaml.safe_dump(json.loads(text), sort_keys=False, allow_unicode=True).rstrip("\n")
    sys.stdout.write(text + "\n")


def emit(document: Any, as_json: bool, show: Callable[[], None]) -> None:
    """The document for scripts (--json, --output json|yaml), else as `show` prints it for a person."""
    if as_json:
        emit_json(document)
    else:
        show()


def when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")


def short_when(epoch: float | None) -> str:
    """A time in 14 characters (month-day hour:minute:second, UTC), for lines that fit 80 columns."""
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, UTC).strftime("%m-%d %H:%M:%S")


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


def lines(columns: list[str], rows: list[list[Any]]) -> None:
    """Rows one line each, columns apart by two spaces and no borders (as `kubectl get` prints): a cell
    too long for the terminal is cut with an ellipsis, never wrapped onto a second line."""
    grid = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 2, 0, 0))
    for column in columns:
        grid.add_column(column, no_wrap=True, overflow="ellipsis")
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
    waiting_for, steps = shown.pop("waiting_for", None), shown.pop("steps", None)
    if waiting_for:
        shown["waiting for"] = wait_text(waiting_for)
    fields(f"job {job.get('id')}", shown)
    if steps:
        steps_table(steps)


# Durable jobs (docs/guides/durable-jobs.md) ---------------------------------------------------------------

STEP_STYLES = {**STATUS_STYLES, "errored": "red", "timed_out": "magenta"}


def wait_text(waiting_for: dict[str, Any]) -> str:
    """What a waiting job waits for, in words: `event payment.received matching {"order": 42}, until ...`."""
    kind, step = waiting_for.get("kind"), waiting_for.get("step")
    if kind == "sleep":
        what = f"sleep until {when(waiting_for.get('until'))} UTC"
    elif kind == "event":
        match = waiting_for.get("match")
        what = f"event {waiting_for.get('name')}" + (f" matching {json.dumps(match)}" if match else "")
    elif kind == "token":
        what = f"token {waiting_for.get('token')}"
    elif kind == "job":  # run_job: one child's id; run_jobs: their count and batch (their ids when few)
        children, batch = waiting_for.get("job_ids") or [], waiting_for.get("batch")
        count = waiting_for.get("count", len(children))
        what = f"child job {children[0]}" if count == 1 and children else f"{count or 'its'} child jobs"
        what += f" of batch {batch}" if batch else ""
    else:
        what = json.dumps(waiting_for)
    if waiting_for.get("timeout_at") is not None:
        what += f", timing out {when(waiting_for['timeout_at'])} UTC"
    return f"{what} (step {step})" if step else what


def steps_table(steps: list[dict[str, Any]]) -> None:
    """A durable job's steps in the order they first ran: kind, status, attempts, when and how long."""
    rows = []
    for place, step in enumerate(steps, start=1):
        started, finished = step.get("started_at"), step.get("finished_at")
        took = f"{finished - started:.2f} s" if started is not None and finished is not None else None
        value = step.get("status") or "-"
        rows.append(
            [
                place,
                step.get("id"),
                step.get("kind"),
                f"[{STEP_STYLES.get(value, 'white')}]{value}[/]",
                step.get("attempts"),
                when(started),
                when(finished),
                took,
            ]
        )
    table("steps (times in UTC)", ["#", "step", "kind", "status", "attempts", "started", "finished", "took"], rows)
