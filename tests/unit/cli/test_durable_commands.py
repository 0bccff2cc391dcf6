"""`corral events send`, `corral tokens complete` and `corral get` of a durable job, run as the console script
runs them (`python -m cli`) against the stub API of tests/unit/sdk/test_python: what they send, what they
print, and a clear message (never a traceback) for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli import render
from tests.unit.sdk.test_python import Stub, stub  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[3]


def run(stub: Stub, *args: str) -> subprocess.CompletedProcess[str]:  # noqa: F811
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")},
        "CORRAL_API_URL": stub.url,
        "CORRAL_API_KEY": "ck_test",
        "CORRAL_ENDPOINT_FILE": str(ROOT / ".corral" / "no-such-endpoint.json"),
        "COLUMNS": "200",
    }
    done = subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_events_send_posts_the_event_and_prints_its_id(stub):  # noqa: F811
    stub.replies = [(202, {"id": "pay-42"})]
    done = run(stub, "events", "send", "payment.received", "--data", '{"order": 42}', "--id", "pay-42")
    assert (done.returncode, done.stdout.strip()) == (0, "pay-42")
    assert stub.requests[0].body == {"name": "payment.received", "data": {"order": 42}, "id": "pay-42"}


def test_bad_json_in_data_names_the_flag_and_sends_nothing(stub, tmp_path):  # noqa: F811
    done = run(stub, "events", "send", "payment.received", "--data", "{order: 42}")
    assert done.returncode == 2 and "--data is not valid JSON" in done.stderr
    done = run(stub, "tokens", "complete", "tk_1", "--data", f"@{tmp_path / 'absent.json'}", "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["message"].startswith("--data: cannot read")
    assert stub.requests == []


def test_tokens_complete_prints_completed_and_a_second_completion_exits_conflict(stub):  # noqa: F811
    stub.replies = [
        (200, {"id": "tk_1", "status": "completed"}),
        (409, {"error": "conflict", "message": "token tk_1 was completed already"}),
    ]
    done = run(stub, "tokens", "complete", "tk_1", "--data", '{"approved": true}')
    assert (done.returncode, done.stdout.strip()) == (0, "tk_1 completed")
    assert stub.requests[0].body == {"data": {"approved": True}}
    again = run(stub, "tokens", "complete", "tk_1")
    assert again.returncode == 4 and "completed already" in again.stderr and again.stdout == ""


def test_get_shows_a_durable_jobs_steps_as_a_table_and_its_wait_in_words(stub):  # noqa: F811
    job_id = "jt" + "a" * 39  # a whole id: no listing to resolve a prefix
    job = {
        "id": job_id,
        "type": "order_flow",
        "status": "waiting",
        "attempts": 1,
        "error": None,
        "enqueued_at": 1_800_000_000.0,
        "started_at": 1_800_000_001.0,
        "finished_at": None,
        "waiting_for": {
            "kind": "event",
            "step": "payment",
            "name": "payment.received",
            "match": {"order": 42},
            "timeout_at": 1_800_003_600.0,
        },
        "steps": [
            {
                "id": "reserve",
                "kind": "step",
                "status": "succeeded",
                "attempts": 2,
                "started_at": 1_800_000_001.0,
                "finished_at": 1_800_000_001.5,
            },
            {
                "id": "payment",
                "kind": "wait_for_event",
                "status": "waiting",
                "attempts": 1,
                "started_at": 1_800_000_002.0,
                "finished_at": None,
            },
        ],
    }
    stub.default = lambda _seen: (200, job)
    shown = run(stub, "get", job_id).stdout
    lines = shown.splitlines()
    assert 'event payment.received matching {"order": 42}, timing out 2027-01-15 09:00:00 UTC (step payment)' in shown
    reserve = next(line for line in lines if "reserve" in line)
    assert all(cell in reserve for cell in ("step", "succeeded", "2", "2027-01-15 08:00:01", "0.50 s"))
    payment = next(line for line in lines if "wait_for_event" in line)
    assert "waiting" in payment and "2027-01-15 08:00:02" in payment
    assert lines.index(reserve) < lines.index(payment)
    assert json.loads(run(stub, "get", job_id, "--json").stdout) == job  # scripts get the view as it is


@pytest.mark.parametrize(
    ("waiting_for", "said"),
    [
        ({"kind": "sleep", "step": "nap", "until": 1_800_000_000.0}, "sleep until 2027-01-15 08:00:00 UTC (step nap)"),
        ({"kind": "event", "step": "pay", "name": "paid", "match": {}}, "event paid (step pay)"),
        (
            {"kind": "token", "step": "ok", "token": "tk_1", "timeout_at": 1_800_000_000.0},
            "token tk_1, timing out 2027-01-15 08:00:00 UTC (step ok)",
        ),
        ({"kind": "job", "step": "child", "job_ids": ["jt1"]}, "child job jt1 (step child)"),
        (
            {"kind": "job", "step": "kids", "batch": "b1", "count": 300},
            "300 child jobs of batch b1 (step kids)",
        ),
    ],
)
def test_each_kind_of_wait_is_said_in_words(waiting_for, said):
    assert render.wait_text(waiting_for) == said
