"""`corral` in a real terminal: tmux at 80 columns against the deployed stack. `corral list` prints one
line per job, none wrapped, and the short ids it shows work in `corral get`; `corral watch` streams changes."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
import uuid

import pytest

from local.deploy import create_api_key
from tests.e2e.cli_runner import ROOT
from tests.e2e.helpers import eventually

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (`make test` installs it)")
COLUMNS = 80


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True, timeout=30).stdout


@pytest.fixture
def pane(deployed):
    """A fresh tenant's shell in an 80-column tmux pane, with the stack's API in its environment."""
    tenant = f"tmux-{uuid.uuid4().hex[:8]}"
    key = create_api_key(deployed.aws_env, tenant, "cli terminal test")
    session = f"corral-test-{uuid.uuid4().hex[:8]}"
    env = {
        "CORRAL_API_URL": deployed.api_url,
        "CORRAL_API_KEY": key,
        "CORRAL_ENDPOINT_FILE": str(ROOT / ".corral" / "no-such-endpoint.json"),
        "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",  # `corral`, as `make install` puts it
        "TERM": "xterm-256color",
        "PS1": "$ ",
    }
    exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
    _tmux(
        "new-session", "-d", "-s", session, "-x", str(COLUMNS), "-y", "60", f"env -i {exports} bash --norc --noprofile"
    )
    try:
        yield session, deployed.client(key)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, timeout=30, check=False)


def _run_in(session: str, command: str, timeout: float = 120) -> list[str]:
    """Type `command` into the pane and wait for it to end: the pane's lines it printed, as shown."""
    marker = f"done-{uuid.uuid4().hex[:6]}"
    _tmux("send-keys", "-t", session, "clear", "Enter")
    _tmux("send-keys", "-t", session, f"{command}; echo {marker}", "Enter")

    def ended() -> list[str]:
        shown = _tmux("capture-pane", "-p", "-t", session).splitlines()
        assert any(line.strip() == marker for line in shown), "\n".join(shown)
        return shown

    shown = eventually(ended, timeout=timeout, message=f"{command!r} to end")
    joined = _tmux("capture-pane", "-p", "-J", "-t", session).splitlines()
    # -J joins lines the terminal wrapped: a wrapped line makes the two captures differ
    assert [line.rstrip() for line in joined] == [line.rstrip() for line in shown], "a line wrapped"
    start = next(i for i, line in enumerate(shown) if command[:20] in line) + 1
    return [line for line in shown[start:] if line.strip() and line.strip() != marker]


def test_list_at_80_columns_prints_one_line_per_job_and_its_short_ids_work(pane):
    session, api = pane
    api.timeout = 30
    ids = [api.enqueue("echo", {"n": n, "note": "a payload the list does not show"}) for n in range(6)]
    for job_id in ids:
        api.wait(job_id, timeout=120)
    lines = _run_in(session, "corral list --limit 6")

    assert all(len(line.rstrip()) <= COLUMNS for line in lines)
    header, *rows = [line for line in lines if not line.startswith("$")]
    assert header.split()[:3] == ["id", "type", "status"]
    rows = [row for row in rows if len(row.split()) >= 5 and row.split()[2] == "succeeded"]
    assert len(rows) == 6  # one line per job
    shown = [row.split()[0] for row in rows]
    assert sorted(next(job_id for job_id in ids if job_id.startswith(prefix)) for prefix in shown) == sorted(ids)
    assert all(len(prefix) < len(ids[0]) for prefix in shown)

    got = _run_in(session, f"corral get {shown[0]} -o yaml")
    assert any(line.startswith("status: succeeded") for line in got)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_watch_streams_a_jobs_changes_and_ends_cleanly_on_ctrl_c(deployed):
    key = create_api_key(deployed.aws_env, f"watch-{uuid.uuid4().hex[:8]}", "cli watch test")
    api = deployed.client(key)
    api.timeout = 30
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith(("CORRAL_", "AWS_"))},
        "CORRAL_API_URL": deployed.api_url,
        "CORRAL_API_KEY": key,
        "CORRAL_ENDPOINT_FILE": str(ROOT / ".corral" / "no-such-endpoint.json"),
    }
    watching = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "corral"), "watch", "--interval", "1", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal sends it: a suite started in the background (`make test &`) ignores SIGINT, and
        # its children would inherit that, so Python would never raise KeyboardInterrupt in the CLI.
        preexec_fn=_default_sigint,
    )
    printed: list[str] = []

    def read_as_printed() -> None:
        assert watching.stdout is not None
        for line in watching.stdout:
            printed.append(line)

    reader = threading.Thread(target=read_as_printed, daemon=True)
    reader.start()

    def statuses_shown() -> list[str]:
        seen = [json.loads(line) for line in list(printed) if line.strip()]
        return [each["status"] for each in seen if each["id"] == job_id]

    try:
        job_id = api.enqueue("sleep", {"seconds": 2})
        api.wait(job_id, timeout=120)
        eventually(
            lambda: statuses_shown()[-1:] == ["succeeded"], timeout=30, message="watch to print the finished job"
        )
    finally:
        watching.send_signal(signal.SIGINT)
        watching.wait(timeout=30)
        reader.join(timeout=30)
        stderr = watching.stderr.read()

    statuses = statuses_shown()
    assert statuses and statuses[-1] == "succeeded", printed
    assert len(statuses) == len(set(statuses))  # a line per change, not per look
    assert "Traceback" not in stderr and watching.returncode == 130
