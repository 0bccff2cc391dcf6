"""`corral completion`: shell completion of commands, options and values, through Typer's own mechanism."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from typer import completion as typer_completion

from cli.render import out

PROG = "corral"
COMPLETE_VAR = "_CORRAL_COMPLETE"  # the shell sets it when it asks `corral` for completions


class Shell(StrEnum):
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


def init() -> None:
    """Let `corral` answer the shell's completion requests (Typer's completion classes for click)."""
    typer_completion.completion_init()


def register(app: typer.Typer) -> None:
    app.command(name="completion", rich_help_panel="Setup")(completion)


def completion(
    shell: Annotated[Shell, typer.Argument(help="The shell to complete in.")] = Shell.BASH,
    install: Annotated[bool, typer.Option("--install", help="Add it to the shell's start-up file.")] = False,
) -> None:
    """Print the shell's completion script (`eval "$(corral completion bash)"`), or --install it."""
    if install:
        shell_name, path = typer_completion.install(shell=shell.value, prog_name=PROG, complete_var=COMPLETE_VAR)
        out.print(f"{shell_name} completion installed in {path}; open a new shell to use it")
        return
    script = typer_completion.get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell.value)
    out.print(script, markup=False, highlight=False, soft_wrap=True)
