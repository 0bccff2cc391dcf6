"""Changing a schedule against moto: update (PATCH), pause and resume, each one UpdateSchedule within the
record's states; and a run triggered by hand."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared import settings
from shared.aws import eventbridge
from shared.errors import InvalidRequest, NotFound
from shared.model.message import JobMessage
from shared.model.states import Status
from shared.schedules import definitions, lifecycle, queries, runs
from shared.store.jobs import job_claims, job_store
from shared.store.schedules import schedule_items
from shared.tenants import quotas


def _create(name: str = "nightly", **changes: Any) -> None:
    from shared.model.spec import JobSpec

    request = {"name": name, "expression": "cron(0 0 * * ? *)", "job": JobSpec("echo", payload={"n": 1}), **changes}
    lifecycle.create("acme", definitions.ScheduleRequest(**request))


def _in_scheduler(scheduler_env: dict[str, Any], name: str = "nightly") -> dict[str, Any]:
    return scheduler_env["scheduler"].get_schedule(
        Name=lifecycle.scheduler_name("acme", name), GroupName=settings.SCHEDULE_GROUP
    )


def _firing(scheduler_env: dict[str, Any], name: str = "nightly") -> dict[str, Any]:
    return json.loads(_in_scheduler(scheduler_env, name)["Target"]["Input"])


def test_an_update_changes_the_record_and_the_scheduler_schedule_in_one_call(scheduler_env):
    _create()
    before = queries.get("acme", "nightly").public()

    updated = lifecycle.update(
        "acme",
        "nightly",
        {
            "expression": "rate(5 minutes)",
            "job": {"payload": {"n": 2}},
            "overlap": "skip",
            "description": "the nightly report",
        },
    ).public()

    assert updated["expression"] == "rate(5 minutes)"
    assert updated["job"] == {**before["job"], "payload": {"n": 2}}  # job fields not given keep their values
    assert (updated["overlap"], updated["description"]) == ("skip", "the nightly report")
    assert updated["created_at"] == before["created_at"] and updated["updated_at"] is not None
    entry = _in_scheduler(scheduler_env)
    assert entry["ScheduleExpression"] == "rate(5 minutes)"
    assert entry["Description"] == "the nightly report"
    firing = _firing(scheduler_env)
    assert (firing["payload"], firing["overlap"]) == ({"n": 2}, "skip")
    assert queries.get("acme", "nightly").public() == updated
    assert quotas.usage("acme")["schedules"] == 1  # an update never changes the count


def test_a_field_given_as_null_is_cleared(scheduler_env):
    _create(end=datetime.now(UTC) + timedelta(days=3), description="soon over")

    updated = lifecycle.update("acme", "nightly", {"end": None, "description": None})

    assert (updated.end, updated.description) == (None, None)
    assert "EndDate" not in _in_scheduler(scheduler_env)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"expression": "cron(0 0 * * *)"}, "expression"),
        ({"expression": "at(2020-01-01T00:00:00)"}, "expression"),
        ({"timezone": "Nowhere/Special"}, "timezone"),
        ({"job": {"type": "nope"}}, "job.type"),
        ({"job": {"max_attempts": 0}}, "job.max_attempts"),
        ({"job": {"type": "sleep", "payload": {"seconds": 600}}}, "job.payload.seconds"),
        ({"flexible_window_minutes": 5000}, "flexible_window_minutes"),
        ({"start": datetime.now(UTC) - timedelta(hours=1)}, "start"),
        ({"end": datetime.now(UTC) - timedelta(minutes=1)}, "end"),
        ({"start": datetime.now(UTC) + timedelta(days=2), "end": datetime.now(UTC) + timedelta(days=1)}, "end"),
        ({"overlap": "sometimes"}, "overlap"),
        ({"description": "x" * 513}, "description"),
        ({"name": "renamed"}, "name"),
    ],
)
def test_an_invalid_update_names_the_field_and_changes_nothing(scheduler_env, changes, field):
    _create()
    before, in_scheduler = queries.get("acme", "nightly").public(), _in_scheduler(scheduler_env)

    with pytest.raises(InvalidRequest) as refused:
        lifecycle.update("acme", "nightly", changes)

    assert refused.value.field == field
    assert queries.get("acme", "nightly").public() == before
    assert _in_scheduler(scheduler_env)["LastModificationDate"] == in_scheduler["LastModificationDate"]


def test_what_scheduler_refuses_answers_422_and_leaves_the_schedule_as_it_was(scheduler_env, monkeypatch):
    _create()
    before = queries.get("acme", "nightly").public()

    def refuses(*_args: Any) -> None:
        raise eventbridge.Rejected("expression", "Invalid Schedule Expression")

    monkeypatch.setattr(eventbridge, "update", refuses)
    with pytest.raises(InvalidRequest) as refused:
        lifecycle.update("acme", "nightly", {"expression": "rate(7 minutes)"})

    assert refused.value.field == "expression"
    after = schedule_items.get("acme", "nightly")
    assert after.current_state is schedule_items.State.ACTIVE and after.pending is None
    assert queries.get("acme", "nightly").public() == before


def test_an_unknown_or_another_tenants_schedule_is_not_found(scheduler_env):
    _create()
    with pytest.raises(NotFound):
        lifecycle.update("acme", "nope", {"description": "x"})
    for change in (
        lambda: lifecycle.update("globex", "nightly", {"description": "x"}),
        lambda: lifecycle.pause("globex", "nightly"),
        lambda: runs.trigger("globex", "nightly"),
    ):
        with pytest.raises(NotFound):
            change()
    assert queries.get("acme", "nightly").description is None


def test_pause_disables_the_schedule_and_resume_enables_it_each_idempotent(scheduler_env):
    _create()

    paused = lifecycle.pause("acme", "nightly", note="incident 42")
    view = paused.public()
    assert (view["state"], view["note"]) == ("paused", "incident 42") and view["paused_at"]
    assert _in_scheduler(scheduler_env)["State"] == "DISABLED"
    assert queries.next_firings(paused, count=3) == []

    again = lifecycle.pause("acme", "nightly", note="another note")
    assert again.public() == view  # the first pause's time and note stay

    resumed = lifecycle.resume("acme", "nightly").public()
    assert (resumed["state"], resumed["paused_at"], resumed["note"]) == ("enabled", None, None)
    assert _in_scheduler(scheduler_env)["State"] == "ENABLED"
    assert lifecycle.resume("acme", "nightly").public() == resumed
    assert len(queries.next_firings(queries.get("acme", "nightly"), count=3)) == 3


def test_an_update_keeps_a_paused_schedule_paused(scheduler_env):
    _create()
    lifecycle.pause("acme", "nightly")

    lifecycle.update("acme", "nightly", {"job": {"payload": {"n": 3}}})

    assert _in_scheduler(scheduler_env)["State"] == "DISABLED"
    assert queries.get("acme", "nightly").public()["state"] == "paused"


def _dies(*_args: Any, **_kwargs: Any) -> None:
    raise RuntimeError("the request died here")


def _past_the_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    later = time.time() + settings.SCHEDULE_CHANGE_LEASE_SECONDS + 1
    monkeypatch.setattr(lifecycle, "_clock", lambda: later)


def test_an_update_that_died_after_scheduler_took_it_is_finished_by_the_next_request_after_the_lease(
    scheduler_env, monkeypatch
):
    _create()
    with monkeypatch.context() as patched, pytest.raises(RuntimeError):
        patched.setattr(schedule_items, "finishing_update", _dies)
        lifecycle.update("acme", "nightly", {"job": {"payload": {"n": 9}}})
    assert _firing(scheduler_env)["payload"] == {"n": 9}  # Scheduler has the new definition

    shown = queries.get("acme", "nightly")  # the record is `updating`: shown as it was
    assert shown.job["payload"] == {"n": 1}
    with pytest.raises(lifecycle.ScheduleBusy, match="being updated"):
        lifecycle.update("acme", "nightly", {"description": "meanwhile"})

    _past_the_lease(monkeypatch)
    finished = queries.get("acme", "nightly")
    assert finished.job["payload"] == {"n": 9}
    assert finished.current_state is schedule_items.State.ACTIVE and finished.pending is None
    assert lifecycle.update("acme", "nightly", {"description": "now"}).description == "now"


def test_an_update_that_died_before_scheduler_took_it_is_applied_after_the_lease(scheduler_env, monkeypatch):
    _create()
    with monkeypatch.context() as patched, pytest.raises(RuntimeError):
        patched.setattr(eventbridge, "update", _dies)
        lifecycle.pause("acme", "nightly", note="incident")
    assert _in_scheduler(scheduler_env)["State"] == "ENABLED"

    _past_the_lease(monkeypatch)
    # The operator's recount finishes it too; here the next pause does, then finds it paused already.
    assert lifecycle.pause("acme", "nightly").public()["note"] == "incident"
    assert _in_scheduler(scheduler_env)["State"] == "DISABLED"


def test_a_delete_takes_an_updating_schedule_over_and_the_update_loses(scheduler_env, monkeypatch):
    _create()

    def deleted_meanwhile(name: str, definition: eventbridge.Definition) -> None:
        lifecycle.delete("acme", "nightly")
        raise eventbridge.Gone(name)

    monkeypatch.setattr(eventbridge, "update", deleted_meanwhile)
    with pytest.raises(lifecycle.ScheduleBusy, match="being deleted"):
        lifecycle.update("acme", "nightly", {"description": "late"})

    assert queries.get("acme", "nightly") is None
    assert scheduler_env["scheduler"].list_schedules()["Schedules"] == []
    assert quotas.usage("acme")["schedules"] == 0  # a delete gives its unit back


def _sent(scheduler_env: dict[str, Any]) -> list[dict[str, Any]]:
    messages = scheduler_env["sqs"].receive_message(QueueUrl=scheduler_env["queue_url"], MaxNumberOfMessages=10)
    return [json.loads(message["Body"]) for message in messages.get("Messages", [])]


def test_a_trigger_sends_the_schedules_job_as_a_manual_run_scheduled_now(scheduler_env):
    _create()
    lifecycle.pause("acme", "nightly")  # a paused schedule still runs by hand

    triggered = runs.trigger("acme", "nightly")

    assert triggered.status is Status.QUEUED
    (sent,) = _sent(scheduler_env)
    assert sent["id"] == triggered.id
    assert (sent["schedule"], sent["trigger"], sent["payload"]) == ("nightly", "manual", {"n": 1})
    assert abs(datetime.fromisoformat(sent["scheduled_for"]).timestamp() - time.time()) < 5
    assert "overlap" not in sent  # allow: the default travels as no field


def test_a_trigger_with_an_idempotency_key_is_one_run_however_often_it_is_retried(scheduler_env):
    _create()

    first = runs.trigger("acme", "nightly", idempotency_key="deploy-17")
    again = runs.trigger("acme", "nightly", idempotency_key="deploy-17")
    other = runs.trigger("acme", "nightly", idempotency_key="deploy-18")

    assert first.id == again.id != other.id
    sent = _sent(scheduler_env)
    assert sorted(body["id"] for body in sent) == sorted([first.id, first.id, other.id])  # the claim runs one
    message = JobMessage.from_dict(next(body for body in sent if body["id"] == first.id))
    claimed = job_claims.claim(message, "m1", time.time(), 30)
    assert isinstance(claimed, job_claims.Claimed)
    assert job_store.complete(message.id, claimed.token, "done", time.time())

    assert runs.trigger("acme", "nightly", idempotency_key="deploy-17") == first  # its run exists: not sent again
    assert _sent(scheduler_env) == []
