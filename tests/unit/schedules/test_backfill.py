"""Backfill: one run per firing time of a past window, each with its occurrence's id (moto; the worker's own
handler runs them)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared import ids, settings
from shared.errors import InvalidRequest, RateLimited
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.schedules import definitions, expressions, lifecycle, runs
from shared.store.id_secret import id_secret
from shared.store.jobs import job_claims
from shared.store.schedules.schedule_items import ScheduleItem
from shared.tenants import quotas
from tests.unit.worker_harness import poll, record


def _create(expression: str = "rate(1 minute)", overlap: str = "allow") -> ScheduleItem:
    request = definitions.ScheduleRequest(
        name="tick", expression=expression, job=JobSpec("echo", payload={"n": 1}), overlap=overlap
    )
    return lifecycle.create("acme", request)


def _run_everything(aws: dict[str, Any]) -> None:
    while poll(aws) is not None:
        pass


def _queued(aws: dict[str, Any]) -> int:
    attributes = aws["sqs"].get_queue_attributes(
        QueueUrl=aws["queue_url"], AttributeNames=["ApproximateNumberOfMessages"]
    )
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def test_a_backfill_of_ten_minutes_of_a_rate_schedule_is_ten_runs_and_a_repeat_is_none_more(scheduler_env):
    created = _create().created_at
    end = datetime.now(UTC)
    start = end - timedelta(minutes=10)

    first = runs.backfill("acme", "tick", start, end)

    assert len(first) == 10
    times = [datetime.fromisoformat(run.scheduled_for) for run in first]
    assert times == sorted(times) and start <= times[0] and times[-1] < end
    assert all((created - when).total_seconds() % 60 < 1 for when in times)  # on the rate's beat from creation
    assert [run.id for run in first] == [
        ids.scheduled_id(id_secret(), "acme", "tick", run.scheduled_for) for run in first
    ]  # each occurrence's own id
    _run_everything(scheduler_env)
    shown = runs.recent("acme", "tick")
    assert len(shown) == 10 and {(run["status"], run["trigger"]) for run in shown} == {("succeeded", "backfill")}

    assert runs.backfill("acme", "tick", start, end) == first  # the same answer
    _run_everything(scheduler_env)
    assert len(runs.recent("acme", "tick")) == 10  # nothing ran twice
    assert {record(run.id).attempts for run in first} == {1}


def test_a_cron_backfill_includes_its_start_and_excludes_its_end(scheduler_env):
    _create("cron(0 * * * ? *)")
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)

    backfilled = runs.backfill("acme", "tick", end - timedelta(hours=3), end)

    expected = [end - timedelta(hours=hours) for hours in (3, 2, 1)]
    assert [run.scheduled_for for run in backfilled] == [when.strftime("%Y-%m-%dT%H:%M:%SZ") for when in expected]
    sent = scheduler_env["sqs"].receive_message(QueueUrl=scheduler_env["queue_url"], MaxNumberOfMessages=10)
    bodies = [json.loads(message["Body"]) for message in sent["Messages"]]
    assert {(body["trigger"], body["schedule"]) for body in bodies} == {("backfill", "tick")}


@pytest.mark.parametrize(
    ("window", "field"),
    [
        (lambda now: (now - timedelta(days=1), now), "end"),  # 1,440 firings: over the limit
        (lambda now: (now - timedelta(minutes=5), now + timedelta(minutes=5)), "end"),  # in the future
        (lambda now: (now - timedelta(minutes=5), now - timedelta(minutes=6)), "end"),  # before its start
    ],
)
def test_a_window_that_cannot_be_backfilled_names_the_field_and_sends_nothing(scheduler_env, window, field):
    _create()
    start, end = window(datetime.now(UTC))

    with pytest.raises(InvalidRequest) as refused:
        runs.backfill("acme", "tick", start, end)

    assert refused.value.field == field
    assert _queued(scheduler_env) == 0


def test_a_backfill_counts_each_run_against_the_rate_limit_all_or_none(scheduler_env):
    _create()
    quotas.set_limits("acme", enqueue_rate_per_second=1 / 86_400, enqueue_burst=5)
    end = datetime.now(UTC)

    assert len(runs.backfill("acme", "tick", end - timedelta(minutes=4), end)) == 4  # 4 of the 5 tokens

    with pytest.raises(RateLimited):
        runs.backfill("acme", "tick", end - timedelta(minutes=10), end)
    assert _queued(scheduler_env) == 4


def test_backfilled_runs_are_not_skipped_for_overlap(scheduler_env):
    _create(overlap="skip")
    live = runs.trigger("acme", "tick")
    (message,) = scheduler_env["sqs"].receive_message(QueueUrl=scheduler_env["queue_url"])["Messages"]
    claimed = job_claims.claim(JobMessage.from_dict(json.loads(message["Body"])), "m", time.time(), 600)
    assert isinstance(claimed, job_claims.Claimed)  # a live run: a trigger or a firing now would be skipped
    end = datetime.now(UTC)

    backfilled = runs.backfill("acme", "tick", end - timedelta(minutes=3), end)
    _run_everything(scheduler_env)

    assert {record(run.id).status for run in backfilled} == {Status.SUCCEEDED}
    assert record(live.id).status is Status.RUNNING


def test_firings_between_counts_a_rate_back_from_its_anchor_and_finds_an_at():
    anchor = datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC)
    found = expressions.firings_between(
        "rate(2 hours)", "UTC", anchor=anchor, start=anchor - timedelta(hours=5), end=anchor, limit=10
    )
    assert found == [anchor - timedelta(hours=4), anchor - timedelta(hours=2)]

    at = expressions.firings_between(
        "at(2026-06-01T14:00:00)", "Europe/Paris", anchor=anchor, start=anchor - timedelta(hours=1), end=anchor, limit=1
    )
    assert at == [datetime(2026, 6, 1, 12, 0, tzinfo=UTC)]
    many = expressions.firings_between(
        "rate(1 minute)",
        "UTC",
        anchor=anchor,
        start=anchor,
        end=anchor + timedelta(days=1),
        limit=settings.BACKFILL_MAX_RUNS,
    )
    assert len(many) == settings.BACKFILL_MAX_RUNS + 1  # one more than the limit: the caller can tell
