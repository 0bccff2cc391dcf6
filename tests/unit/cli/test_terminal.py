"""The CLI in a terminal: short job ids (unique prefixes, resolved back), --output modes, where --output
may be given, and shell completion's script."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from cli import render, short_ids
from cli.common import CliError
from cli.main import _output_first

_B32 = "abcdefghijklmnopqrstuvwxyz234567"
job_ids = st.text(alphabet=_B32, min_size=39, max_size=39).map(lambda core: "jt" + core)


@given(st.lists(job_ids, min_size=1, max_size=60), st.integers(min_value=1, max_value=20))
def test_each_shown_prefix_names_its_id_and_no_other(ids, minimum):
    shown = short_ids.shortest_unique_prefixes(ids, minimum)

    assert set(shown) == set(ids)
    for job_id, prefix in shown.items():
        assert job_id.startswith(prefix) and len(prefix) >= min(minimum, len(job_id))
        assert [other for other in set(ids) if other.startswith(prefix)] == [job_id]
        # the shortest such: one character fewer (past the minimum) would also name another id
        if len(prefix) > minimum:
            assert sum(other.startswith(prefix[:-1]) for other in set(ids)) > 1


def test_ids_minted_in_the_same_second_still_shorten_to_a_few_characters_past_their_shared_head():
    head = "jt" + "abcdefgh"  # the enqueue time: the same for jobs minted close together
    ids = [head + core for core in ("q" * 31, "r" * 31, "s2" + "a" * 29)]

    assert sorted(short_ids.shortest_unique_prefixes(ids).values()) == [ids[0][:12], ids[1][:12], ids[2][:12]]


@dataclass
class _Page:
    jobs: list[dict[str, str]]
    next_cursor: str | None = None


@dataclass
class _Api:
    ids: list[str]
    pages_read: list[int] = field(default_factory=list)

    def pages(self, page_size: int):
        for start in range(0, len(self.ids), page_size):
            self.pages_read.append(start)
            yield _Page([{"id": job_id} for job_id in self.ids[start : start + page_size]], "more")


def test_a_prefix_resolves_to_its_one_job_and_an_ambiguous_or_unknown_one_is_a_clear_error():
    ids = ["jtaaaa" + "x" * 35, "jtaaab" + "y" * 35, "jtbbbb" + "z" * 35]
    api = _Api(ids)

    assert short_ids.resolve(api, "jtaaab") == ids[1]
    assert short_ids.resolve(api, ids[2]) == ids[2]  # a whole id is taken as it is, without a look
    with pytest.raises(CliError, match="start of 2 job ids") as ambiguous:
        short_ids.resolve(api, "jtaaa")
    assert ids[0] in ambiguous.value.message and ids[1] in ambiguous.value.message
    with pytest.raises(CliError, match="no job id starts with 'jtc'"):
        short_ids.resolve(api, "jtc")


def test_a_prefix_is_looked_for_among_the_newest_jobs_only():
    api = _Api([f"jt{n:039d}" for n in range(3_000)])

    with pytest.raises(CliError, match="newest 1000 jobs"):
        short_ids.resolve(api, "jt" + "0" * 35 + "299")
    assert len(api.pages_read) == 10


@pytest.mark.parametrize(
    ("given_", "expected"),
    [
        (["list", "-o", "yaml"], ["-o", "yaml", "list"]),
        (["get", "jt1", "--output=json"], ["--output=json", "get", "jt1"]),
        (["-o", "json", "stats"], ["-o", "json", "stats"]),
        (
            ["schedules", "list", "--output", "table", "--limit", "3"],
            ["--output", "table", "schedules", "list", "--limit", "3"],
        ),
    ],
)
def test_output_may_be_given_after_the_command(given_, expected):
    assert _output_first(given_) == expected


def test_yaml_output_is_the_same_document_as_json(capsys):
    document = {"jobs": [{"id": "jt1", "status": "queued", "payload": {"a": [1, 2]}}], "next_cursor": None}
    try:
        render.choose_output("yaml")
        render.emit_json(document)
        assert yaml.safe_load(capsys.readouterr().out) == document
        render.choose_output("json")
        render.emit_json(document)
        assert json.loads(capsys.readouterr().out) == document
    finally:
        render.choose_output("table")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_shells_script(shell):
    script = subprocess.run(
        [sys.executable, "-m", "cli", "completion", shell], capture_output=True, text=True, check=True, timeout=60
    ).stdout

    assert "_CORRAL_COMPLETE" in script and "corral" in script


def test_the_shell_asks_corral_for_completions_and_gets_its_commands():
    env = {"_CORRAL_COMPLETE": "complete_bash", "COMP_WORDS": "corral li", "COMP_CWORD": "1"}
    answer = subprocess.run(
        [sys.executable, "-m", "cli"], capture_output=True, text=True, timeout=60, env={**_base_env(), **env}
    ).stdout

    assert "list" in answer.split()


def _base_env() -> dict[str, str]:
    import os

    return {name: value for name, value in os.environ.items() if not name.startswith("_CORRAL")}
