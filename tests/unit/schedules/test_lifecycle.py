"""Schedules and delayed jobs against moto: the record, the Scheduler schedule, tenant scoping."""

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from shared import settings
from shared.aws import eventbridge
from shared.errors import InvalidRequest
from shared.jobs.enqueue import JobRequest, enqueue
from shared.model.spec import JobSpec
from shared.schedules import definitions, lifecycle, queries
from shared.store.schedules import schedule_items
from shared.tenants import quotas


def _request(name="nightly", **changes):
    return definitions.ScheduleRequest(
        **{"name": name, "expression": "cron(0 0 * * ? *)", "job": JobSpec("echo", payload={"n": 1}), **changes}
    )


def test_a_schedule_targets_the_queue_with_a_firing_input(scheduler_env):
    lifecycle.create("acme", _request(timezone="Europe/Paris", flexible_window_minutes=15))

    entry = scheduler_env["scheduler"].get_schedule(
        Name=lifecycle.scheduler_name("acme", "nightly"), GroupName=settings.SCHEDULE_GROUP
    )
    assert entry["ScheduleExpression"] == "cron(0 0 * * ? *)"
    assert entry["ScheduleExpressionTimezone"] == "Europe/Paris"
    assert entry["FlexibleTimeWindow"] == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15}
    assert entry["Target"]["Arn"].endswith(settings.QUEUE_NAME)
    firing = json.loads(entry["Target"]["Input"])
    assert firing["scheduled_for"] == "<aws.scheduler.scheduled-time>"
    assert (firing["tenant"], firing["schedule"], firing["type"]) == ("acme", "nightly", "echo")


def test_a_name_is_taken_once_per_tenant(scheduler_env):
    lifecycle.create("acme", _request())
    with pytest.raises(lifecycle.ScheduleExists):
        lifecycle.create("acme", _request())
    lifecycle.create("globex", _request())  # another tenant's namesake

    assert [item.name for item in queries.list_for("acme")] == ["nightly"]
    assert queries.get("initech", "nightly") is None


def test_delete_removes_the_record_and_the_schedule(scheduler_env):
    lifecycle.create("acme", _request())

    lifecycle.delete("acme", "nightly")
    assert queries.get("acme", "nightly") is None
    assert scheduler_env["scheduler"].list_schedules(GroupName=settings.SCHEDULE_GROUP)["Schedules"] == []
    with pytest.raises(lifecycle.ScheduleNotFound):
        lifecycle.delete("acme", "nightly")
    with pytest.raises(lifecycle.ScheduleNotFound, match="no schedule 'nightly'"):
        queries.existing("acme", "nightly")


def _scheduled(scheduler_env) -> list[str]:
    return [entry["Name"] for entry in scheduler_env["scheduler"].list_schedules()["Schedules"]]


def test_a_create_that_died_half_way_is_finished_as_a_delete_once_its_lease_is_over(scheduler_env, monkeypatch):
    def dies(*_args, **_kwargs):
        raise RuntimeError("the request died here")

    with monkeypatch.context() as patched, pytest.raises(RuntimeError):
        patched.setattr(schedule_items, "mark_active", dies)
        lifecycle.create("acme", _request())
    monkeypatch.setattr(lifecycle, "_sleep", lambda _seconds: None)
    assert _scheduled(scheduler_env) == [lifecycle.scheduler_name("acme", "nightly")]

    assert queries.get("acme", "nightly") is None  # being created: not shown
    with pytest.raises(lifecycle.ScheduleBusy, match="being created"):
        lifecycle.delete("acme", "nightly")
    with pytest.raises(lifecycle.ScheduleBusy, match="being created"):
        lifecycle.create("acme", _request())
    assert quotas.usage("acme")["schedules"] == 1

    later = time.time() + settings.SCHEDULE_CHANGE_LEASE_SECONDS + 1
    monkeypatch.setattr(lifecycle, "_clock", lambda: later)
    assert queries.get("acme", "nightly") is None
    assert _scheduled(scheduler_env) == []
    assert quotas.usage("acme")["schedules"] == 0
    assert queries.list_for("acme") == []
    lifecycle.create("acme", _request())  # the name is free again
    assert quotas.usage("acme")["schedules"] == 1


def test_a_delete_that_died_half_way_is_finished_by_the_next_delete(scheduler_env, monkeypatch):
    lifecycle.create("acme", _request())

    def dies(*_args, **_kwargs):
        raise RuntimeError("the request died here")

    with monkeypatch.context() as patched, pytest.raises(RuntimeError):
        patched.setattr(eventbridge, "delete", dies)
        lifecycle.delete("acme", "nightly")
    assert queries.get("acme", "nightly") is None  # being deleted: not shown

    lifecycle.delete("acme", "nightly")
    assert _scheduled(scheduler_env) == []
    assert quotas.usage("acme")["schedules"] == 0


def test_a_recount_removes_schedules_left_without_a_record(scheduler_env):
    from shared.operations import recount

    lifecycle.create("acme", _request("kept"))
    left = lifecycle.scheduler_name("acme", "left")
    eventbridge.create(left, "rate(1 hour)", "{}")

    done = recount.recount("acme")

    assert done.schedules_repaired == [left]
    assert _scheduled(scheduler_env) == [lifecycle.scheduler_name("acme", "kept")]
    assert done.after["schedules"] == 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"expression": "cron(0 0 * * *)"}, "expression"),
        ({"timezone": "Nowhere/Special"}, "timezone"),
        ({"job": JobSpec("nope", payload={"n": 1})}, "job.type"),
        ({"job": JobSpec("echo", payload={"n": 1}, max_attempts=0)}, "job.max_attempts"),
        ({"name": "a/b"}, "name"),
        ({"end": datetime.now(UTC) - timedelta(minutes=1)}, "end"),
        ({"start": datetime.now(UTC) + timedelta(days=2), "end": datetime.now(UTC) + timedelta(days=1)}, "end"),
    ],
)
def test_an_invalid_schedule_names_the_field_and_creates_nothing(scheduler_env, changes, field):
    with pytest.raises(InvalidRequest) as refused:
        lifecycle.create("acme", _request(**changes))
    assert refused.value.field == field
    assert queries.list_for("acme") == []


def test_a_job_due_within_15_minutes_rides_the_sqs_delay(scheduler_env):
    enqueue("acme", JobRequest(JobSpec("echo"), delay_seconds=600))

    attributes = scheduler_env["sqs"].get_queue_attributes(
        QueueUrl=scheduler_env["queue_url"], AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesDelayed"] == "1"
    assert scheduler_env["scheduler"].list_schedules()["Schedules"] == []


def test_a_job_due_later_becomes_a_one_time_schedule(scheduler_env):
    run_at = datetime.now(UTC) + timedelta(hours=2)
    message = enqueue("acme", JobRequest(JobSpec("echo"), run_at=run_at))

    entry = scheduler_env["scheduler"].get_schedule(Name=f"d-{message.id}", GroupName=settings.SCHEDULE_GROUP)
    due = run_at.replace(microsecond=0) + timedelta(seconds=1 if run_at.microsecond else 0)
    assert entry["ScheduleExpression"] == f"at({due:%Y-%m-%dT%H:%M:%S})"
    assert entry["ActionAfterCompletion"] == "DELETE"
    assert json.loads(entry["Target"]["Input"])["id"] == message.id


def test_a_run_at_in_the_past_runs_now(scheduler_env):
    enqueue("acme", JobRequest(JobSpec("echo"), run_at=datetime.fromtimestamp(time.time() - 60, UTC)))

    received = scheduler_env["sqs"].receive_message(QueueUrl=scheduler_env["queue_url"])
    assert len(received["Messages"]) == 1
