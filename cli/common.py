"""What every command shares: the API client, option types, exit codes, and user-facing errors."""

from __future__ import annotations

from enum import IntEnum
from typing import Annotated

import typer

from cli import render, target
from client import Corral


class Exit(IntEnum):
    """`corral`'s exit codes (README, "The corral CLI")."""

    OK = 0
    JOB_FAILED = 1  # the job waited for ended dead or cancelled
    USAGE = 2  # bad command line (also click's own)
    NOT_FOUND = 3
    CONFLICT = 4  # the job's state does not allow it
    AUTH = 5  # 401/403, or AWS credentials refused
    INVALID = 6  # the API refused the input (4xx), or an operator request that cannot be done
    UNAVAILABLE = 7  # 429/503/no connection after retries, AWS unreachable: try again later
    TIMEOUT = 8  # a wait ran out
    PARTIAL = 9  # bulk work: some items refused, the rest done
    INTERNAL = 10  # a 500 or a bug in the CLI


class CliError(Exception):
    """An error shown to the user as one line (no traceback), with its exit code."""

    def __init__(self, message: str, exit_code: Exit = Exit.INVALID, code: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = code


def _for_scripts(as_json: bool) -> bool:
    # `--json` is `--output json`; under `--output json|yaml` (given before or after the command) every
    # command prints its one document, whichever it is.
    if as_json:
        render.choose_output("json")
    return as_json or render.for_scripts()


JsonFlag = Annotated[
    bool,
    typer.Option(
        "--json", help="Print one JSON document to stdout (for scripts); = --output json.", callback=_for_scripts
    ),
]

_api_options: dict[str, str | None] = {"url": None, "key": None}


def set_api_options(url: str | None, key: str | None) -> None:
    _api_options.update(url=url, key=key)


def corral() -> Corral:
    try:
        api = target.api(_api_options["url"], _api_options["key"])
    except target.TargetError as error:
        raise CliError(str(error), Exit.USAGE, "no_target") from error
    return Corral(api.url, api.key)
