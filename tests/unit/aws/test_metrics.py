"""What the worker counts for the alarms and the dashboard (shared/aws/metrics.py): hand-backs a store
outage causes apart from a retry's backoff, and dead letters per tenant (never a page)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shared.aws import metrics, queue

ROOT = Path(__file__).resolve().parents[3]


def _emf_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{") and "_aws" in line]


@pytest.fixture
def flushed(capsys: pytest.CaptureFixture[str]):
    """The metrics the code under test added, as the handler's flush prints them (EMF)."""

    def flush() -> dict[str, float]:
        metrics.metrics.flush_metrics(raise_on_empty_metrics=False)
        found: dict[str, float] = {}
        for line in _emf_lines(capsys.readouterr().out):
            for definition in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
                value = line[definition["Name"]]  # a list when the metric was added more than once
                found[definition["Name"]] = sum(value) if isinstance(value, list) else value
        return found

    metrics.metrics.clear_metrics()
    return flush


def test_a_store_outages_hand_backs_are_counted_apart_from_a_retrys_backoff(flushed):
    metrics.handed_back("store unavailable for the claim: ThrottlingException")
    metrics.handed_back("the store failed moments ago: not recording now")
    metrics.handed_back("JobFailed: the customer's endpoint answered 503")  # a retry's backoff
    metrics.handed_back("too little of the invocation left to start this job within its timeout")
    assert flushed() == {"JobsRetried": 4, "StoreHandBacks": 2}


def test_every_store_outage_reason_the_worker_gives_is_recognised():
    """The worker's hand-back reasons that name the store (shared/worker/) are the outage ones."""
    reasons = set()
    for path in (ROOT / "shared" / "worker").glob("*.py"):
        reasons |= set(re.findall(r'hand_back\(\s*f?"([^"{]*store[^"{]*)', path.read_text()))
        reasons |= set(re.findall(r'reason = f?"([^"{]*store unavailable[^"{]*)', path.read_text()))
    assert reasons
    assert all(reason.startswith(metrics.STORE_OUTAGE_REASONS) for reason in reasons), reasons


def test_each_dead_letter_is_counted_for_its_tenant_on_a_line_of_its_own(aws, capsys):
    job = {"v": 1, "id": "j1", "tenant": "acme", "type": "echo", "payload": {"tenant": "not-this-one"}}
    queue.send_to_dlq(json.dumps(job), "attempts used up")
    queue.send_to_dlq(json.dumps({"kind": "outcome", "job": {**job, "tenant": "globex"}}), "refused")
    queue.send_to_dlq("not json at all", "unreadable")
    queue.send_to_dlq("[" * 100_000, "too deep to parse")
    lines = [line for line in _emf_lines(capsys.readouterr().out) if "DeadLettersByTenant" in line]
    assert [(line["tenant"], line["DeadLettersByTenant"]) for line in lines] == [
        ("acme", [1.0]),
        ("globex", [1.0]),
        (metrics.UNKNOWN_TENANT, [1.0]),
        (metrics.UNKNOWN_TENANT, [1.0]),
    ]
    assert all(line["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["tenant"]] for line in lines)
