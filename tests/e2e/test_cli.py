"""The `corral` CLI driven as a subprocess against the deployed stack: --json parsed, human tables
read, exit codes meant for scripts."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.e2e.cli_runner import run_cli


@pytest.fixture(scope="module", autouse=True)
def warm(deployed):
    """A first job through the stack, so cold starts (minutes on a loaded 2-core machine) are not
    charged to the CLI's 60 s waits."""
    api = deployed.client()
    api.timeout = 30
    api.wait(api.enqueue("echo", "warm-up"), timeout=300)


def test_enqueue_wait_returns_the_finished_job_as_json(deployed):
    ran = run_cli(deployed, "enqueue", "echo", "--payload", '{"hello": "cli"}', "--wait", "--json")
    assert ran.code == 0, ran.stderr
    job = ran.json()
    assert (job["status"], job["result"]) == ("succeeded", {"hello": "cli"})

    shown = run_cli(deployed, "get", job["id"])
    assert shown.code == 0 and job["id"] in shown.stdout and "succeeded" in shown.stdout


def test_payload_from_a_file_and_a_human_listing(deployed, tmp_path):
    payload = tmp_path / "payload.json"
    marker = f"cli-{uuid.uuid4().hex[:8]}"
    payload.write_text(json.dumps({"marker": marker}))
    enqueued = run_cli(deployed, "enqueue", "echo", "--payload", f"@{payload}")
    assert enqueued.code == 0, enqueued.stderr
    job_id = enqueued.stdout.strip()
    assert run_cli(deployed, "wait", job_id, "--json").json()["result"] == {"marker": marker}

    listed = run_cli(deployed, "list", "--type", "echo", "--limit", "50", "--wide")
    assert listed.code == 0, listed.stderr
    header = next(line for line in listed.stdout.splitlines() if "status" in line and "tries" in line)
    assert "id" in header and "type" in header
    row = next(line for line in listed.stdout.splitlines() if job_id in line)
    assert "echo" in row and "succeeded" in row and "1/3" in row

    as_json = run_cli(deployed, "list", "--status", "succeeded", "--limit", "5", "--json").json()
    assert 1 <= len(as_json["jobs"]) <= 5 and {j["status"] for j in as_json["jobs"]} == {"succeeded"}
    assert "note" in as_json and "next_cursor" in as_json


def test_bulk_from_file_reports_each_refused_job_and_exits_partial(deployed, tmp_path):
    jobs = tmp_path / "jobs.jsonl"
    lines = [json.dumps({"payload": {"n": n}}) for n in range(120)]
    lines[42] = json.dumps({"payload": 1, "max_attempts": 0})
    jobs.write_text("\n".join(lines) + "\n")
    ran = run_cli(deployed, "enqueue", "echo", "--from-file", str(jobs), "--json")
    assert ran.code == 9, ran.stderr  # partly done
    answer = ran.json()
    assert (answer["accepted"], answer["rejected"]) == (119, 1)
    refused = [r for r in answer["results"] if r["status"] == "rejected"]
    assert [(r["index"], r["error"]) for r in refused] == [(42, "invalid_request")]
    assert "max_attempts" in refused[0]["field"] and refused[0]["message"]


def test_errors_are_one_line_with_meaningful_exit_codes(deployed):
    missing = run_cli(deployed, "get", "jt" + "a" * 38)
    assert missing.code == 3 and "error:" in missing.stderr and len(missing.stderr.strip().splitlines()) <= 3
    as_json = run_cli(deployed, "get", "jt" + "a" * 38, "--json")
    assert as_json.code == 3 and as_json.json()["error"] == "not_found"

    bad_payload = run_cli(deployed, "enqueue", "echo", "--payload", "{nope")
    assert bad_payload.code == 2 and "not valid JSON" in bad_payload.stderr

    unknown_key = run_cli(deployed, "stats", api_key="ck_" + "A" * 38)
    assert unknown_key.code == 5 and "unauthorized" in unknown_key.stderr

    usage = run_cli(deployed, "retry")
    assert usage.code == 2


def test_cancel_a_delayed_job_and_a_finished_one_conflicts(deployed):
    delayed = run_cli(deployed, "enqueue", "echo", "--delay", "120", "--json").json()["id"]
    cancelled = run_cli(deployed, "cancel", delayed, "--json")
    assert cancelled.code == 0 and cancelled.json()["status"] == "cancelled"
    again = run_cli(deployed, "cancel", delayed)
    assert again.code == 0 and "cancelled" in again.stdout

    finished = run_cli(deployed, "enqueue", "echo", "--payload", "1", "--wait", "--json").json()["id"]
    conflict = run_cli(deployed, "cancel", finished, "--json")
    assert conflict.code == 4 and conflict.json()["error"] == "conflict"


def test_retry_a_dead_job_and_wait_exit_codes(deployed):
    dead = run_cli(deployed, "enqueue", "fail", "--payload", '{"times": 5}', "--max-attempts", "1", "--wait", "--json")
    assert dead.code == 1 and dead.json()["status"] == "dead"  # waited for, ended dead
    job_id = dead.json()["id"]
    retried = run_cli(deployed, "retry", job_id, "--json")
    assert retried.code == 0 and retried.json() == {"id": job_id, "status": "queued"}
    rerun = run_cli(deployed, "wait", job_id, "--json")
    assert rerun.code == 1 and rerun.json()["retries"] == 1

    bulk = run_cli(deployed, "retry", "--dead", "--type", "fail", "--max", "5", "--json")
    assert bulk.code == 0 and bulk.json()["retried"] >= 0

    slow = run_cli(deployed, "enqueue", "sleep", "--payload", '{"seconds": 5}', "--json").json()["id"]
    timed_out = run_cli(deployed, "wait", slow, "--timeout", "0.5", "--json")
    assert timed_out.code == 8 and timed_out.json()["error"] == "wait_timeout"


def test_schedules_round_trip_and_stats(deployed):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    created = run_cli(deployed, "schedules", "create", name, "rate(1 day)", "echo", "--payload", '{"a": 1}', "--json")
    assert created.code == 0, created.stderr
    assert created.json()["name"] == name
    assert name in [s["name"] for s in run_cli(deployed, "schedules", "list", "--json").json()["schedules"]]
    assert name in run_cli(deployed, "schedules", "list").stdout
    assert run_cli(deployed, "schedules", "get", name, "--json").json()["expression"] == "rate(1 day)"
    assert run_cli(deployed, "schedules", "delete", name).code == 0
    assert run_cli(deployed, "schedules", "get", name).code == 3

    stats = run_cli(deployed, "stats", "--json")
    assert stats.code == 0 and stats.json()["counts"].get("succeeded", 0) >= 1
    assert "jobs by status" in run_cli(deployed, "stats").stdout
