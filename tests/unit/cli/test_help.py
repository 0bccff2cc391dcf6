"""Every command's --help renders: its help text is rich markup, and a stray `[/...]` in it is a closing tag
that fails the whole page (as `corral enqueue --help` once did on `--debounce KEY:SECONDS[/MAX_WAIT]`)."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cli.main import app


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    if hasattr(command, "commands"):  # a group (typer's own, not necessarily click's class)
        for name, sub in command.commands.items():
            found += _command_paths(sub, (*path, name))
    return found


COMMANDS: list[Any] = _command_paths(typer.main.get_command(app))


def test_the_cli_has_its_commands():
    assert ("enqueue",) in COMMANDS and ("schedules", "create") in COMMANDS and len(COMMANDS) > 20


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "corral")
def test_every_commands_help_renders(path):
    answer = CliRunner().invoke(app, [*path, "--help"], terminal_width=80)

    assert answer.exit_code == 0, answer.output
    assert "Usage" in answer.output
