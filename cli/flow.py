"""The flow-control options of `corral enqueue` and `corral schedules create`: --unique, --throttle, --debounce, each
read into a body's field (docs/decisions/unique-jobs.md, throttle.md, debounce.md)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.common import CliError, Exit

UniqueOption = Annotated[
    str | None,
    typer.Option(
        help="KEY[:started|finished[:SECONDS]]: while a job with KEY waits (or, finished, until it ends; at most "
        "SECONDS), enqueue nothing and print that job's id, status duplicate."
    ),
]
ThrottleOption = Annotated[
    str | None,
    typer.Option(
        help="KEY:LIMIT/SECONDS: at most LIMIT jobs with KEY start in any SECONDS (e.g. stripe:10/60); the "
        "others wait their turn."
    ),
]
DebounceOption = Annotated[
    str | None,
    typer.Option(
        # No `[/...]` in help: rich reads it as a closing markup tag, and --help fails.
        help="KEY:SECONDS or KEY:SECONDS/MAX_WAIT: of the jobs with KEY arriving within SECONDS of each other only "
        "the last runs, SECONDS after it (at most MAX_WAIT after the first); the others end skipped (e.g. "
        "user-7:30/300)."
    ),
]


def flow_options(*, unique: str | None, throttle: str | None, debounce: str | None) -> dict[str, Any]:
    """The body's flow options of --unique, --throttle and --debounce (None: not given)."""
    return {
        "unique": unique_option(unique) if unique is not None else None,
        "throttle": throttle_option(throttle) if throttle is not None else None,
        "debounce": debounce_option(debounce) if debounce is not None else None,
    }


def unique_option(value: str) -> dict[str, Any]:
    """--unique KEY[:started|finished[:SECONDS]] as a body's `unique` (until `started` unless given)."""
    key, _, rest = value.partition(":")
    until, _, seconds = rest.partition(":")
    if not key or until not in ("", "started", "finished") or (seconds and not seconds.isdigit()):
        raise CliError("--unique takes KEY[:started|finished[:SECONDS]], e.g. report-42:finished:3600", Exit.USAGE)
    return {"key": key, "until": until or "started"} | ({"for_seconds": int(seconds)} if seconds else {})


def throttle_option(value: str) -> dict[str, Any]:
    """--throttle KEY:LIMIT/SECONDS as a body's `throttle` (the key may hold colons: the last one splits)."""
    key, _, rate = value.rpartition(":")
    limit, _, seconds = rate.partition("/")
    if not key or not limit.isdigit() or not seconds.isdigit():
        raise CliError("--throttle takes KEY:LIMIT/SECONDS, e.g. stripe:10/60", Exit.USAGE)
    return {"key": key, "limit": int(limit), "period_seconds": int(seconds)}


def debounce_option(value: str) -> dict[str, Any]:
    """--debounce KEY:SECONDS[/MAX_WAIT] as a body's `debounce` (the key may hold colons: the last one splits)."""
    key, _, timing = value.rpartition(":")
    period, _, most = timing.partition("/")
    if not key or not period.isdigit() or (most and not most.isdigit()) or timing.endswith("/"):
        raise CliError("--debounce takes KEY:SECONDS[/MAX_WAIT], e.g. user-7:30/300", Exit.USAGE)
    return {"key": key, "period_seconds": int(period)} | ({"max_wait_seconds": int(most)} if most else {})
