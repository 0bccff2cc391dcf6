"""`corral`: the app, its command groups, and the one place errors become messages and exit codes."""

from __future__ import annotations

import math
import os
import sys
from enum import StrEnum
from typing import Annotated

import typer
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from cli import batches, completion, durable, jobs, operator, schedules, triggers
from cli.common import CliError, Exit, set_api_options
from cli.render import choose_output, emit_json, err, for_scripts
from client import errors


class Output(StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


app = typer.Typer(
    name="corral",
    help=(
        "corral: background jobs on AWS. Jobs and schedules go through the API (CORRAL_API_URL, CORRAL_API_KEY, "
        "or the local stack's .corral/endpoint.json); operator commands use AWS credentials."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    epilog=(
        "Exit codes: 0 ok, 1 job ended dead/cancelled, 2 usage, 3 not found, 4 conflict, 5 auth, 6 invalid, "
        "7 unavailable (retry later), 8 wait timed out, 9 partly done, 10 internal."
    ),
)


@app.callback()
def _options(
    api_url: Annotated[str | None, typer.Option(help="API base URL [env CORRAL_API_URL]")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key [env CORRAL_API_KEY]")] = None,
    output: Annotated[
        Output, typer.Option("--output", "-o", help="table for people; json or yaml: one document for scripts.")
    ] = Output.TABLE,
) -> None:
    set_api_options(api_url, api_key)
    choose_output(output.value)


jobs.register(app)
completion.register(app)
app.add_typer(schedules.app, name="schedules", help="Recurring and one-time jobs.")
app.add_typer(batches.app, name="batches", help="Jobs counted as one, with callbacks when they end.")
app.add_typer(triggers.app, name="triggers", help="Events that start jobs.")
durable.register(app)
operator.register(app)

_API_EXITS = {
    errors.NotFound: Exit.NOT_FOUND,
    errors.Conflict: Exit.CONFLICT,
    errors.Unauthorized: Exit.AUTH,
    errors.Forbidden: Exit.AUTH,
    errors.PermissionDenied: Exit.AUTH,
    errors.InvalidRequest: Exit.INVALID,
    errors.RateLimited: Exit.UNAVAILABLE,
    errors.Unavailable: Exit.UNAVAILABLE,
    errors.ConnectionFailed: Exit.UNAVAILABLE,
    errors.WaitTimeout: Exit.TIMEOUT,
    errors.ServerError: Exit.INTERNAL,
}


def _output_first(arguments: list[str]) -> list[str]:
    """`--output X` / `-o X` / `--output=X` moved in front of the command, where the app reads it: people
    type it anywhere (`corral list -o yaml`)."""
    moved: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument in ("--output", "-o") and index + 1 < len(arguments):
            moved += [argument, arguments[index + 1]]
            index += 2
            continue
        if argument.startswith("--output="):
            moved.append(argument)
        else:
            rest.append(argument)
        index += 1
    return moved + rest


def _fail(message: str, exit_code: Exit, code: str, **details: object) -> int:
    if "--json" in sys.argv or for_scripts():
        emit_json({"error": code, "message": message, "exit_code": int(exit_code), **details})
    else:
        err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)
    return int(exit_code)


def main() -> None:
    try:
        completion.init()
        app(args=_output_first(sys.argv[1:]), prog_name="corral")  # usage errors print themselves and exit 2
        return
    except CliError as error:
        code = _fail(error.message, error.exit_code, error.code)
    except errors.CorralError as error:
        exit_code = _API_EXITS.get(type(error), Exit.INVALID)
        details = {"status": error.status, "field": error.field} if error.status else {}
        message = str(error)
        if isinstance(error, errors.PermissionDenied):
            message += " (use a key of that scope: --api-key or CORRAL_API_KEY; `corral keys create` mints one)"
        if isinstance(error, errors.RateLimited) and error.retry_after:
            details["retry_after_seconds"] = math.ceil(error.retry_after)
            message += f" (still limited after the SDK's retries: try again in {math.ceil(error.retry_after)} s)"
        code = _fail(message, exit_code, error.code, **details)
    except NoCredentialsError:
        code = _fail("no AWS credentials for the operator command (or set AWS_ENDPOINT_URL)", Exit.AUTH, "no_aws")
    except ClientError as error:
        info = error.response.get("Error", {})
        auth = info.get("Code", "") in {"AccessDenied", "AccessDeniedException", "UnrecognizedClientException"}
        code = _fail(
            f"AWS refused {error.operation_name}: {info.get('Code')}: {info.get('Message', '')}",
            Exit.AUTH if auth else Exit.UNAVAILABLE,
            "aws_error",
        )
    except BotoCoreError as error:
        code = _fail(f"AWS unreachable: {error}", Exit.UNAVAILABLE, "aws_unreachable")
    except KeyboardInterrupt:
        code = 130
    except Exception as error:  # a bug: one line, the traceback only on request
        if os.environ.get("CORRAL_DEBUG"):
            raise
        code = _fail(
            f"internal error ({type(error).__name__}: {error}); CORRAL_DEBUG=1 shows more", Exit.INTERNAL, "internal"
        )
    sys.exit(code)
