"""Priority lanes on moto (docs/decisions/priorities.md): every path that sends a job's message sends it to its
priority's queue, and a job stays in its lane when it is retried, sent again, handed back or redriven."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from shared import settings
from shared.aws import queue
from shared.batches import batches
from shared.control import retry
from shared.durable.steps import StepKind
from shared.flow.priority import Priority
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message, enqueue, enqueue_many
from shared.model.message import JobMessage
from shared.model.outcome import OutcomeMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.operations import dead_letters
from shared.schedules import lifecycle
from shared.schedules.definitions import ScheduleRequest
from shared.tenants import tenants
from shared.worker.run import children
from tests.unit.api_harness import answer
from tests.unit.worker_harness import messages_held, poll, record


def _held(aws: dict[str, Any]) -> dict[Priority, int]:
    """How many messages each lane's queue holds (visible, in flight or delayed)."""
    return {level: messages_held({**aws, "lane": url}, "lane") for level, url in aws["lane_urls"].items()}


def _only_in(level: Priority, count: int = 1) -> dict[Priority, int]:
    return {each: count if each is level else 0 for each in Priority}


def _bodies(aws: dict[str, Any], level: Priority) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while (
        got := aws["sqs"]
        .receive_message(QueueUrl=aws["lane_urls"][level], MaxNumberOfMessages=10, VisibilityTimeout=60)
        .get("Messages", [])
    ):
        found += [json.loads(message["Body"]) for message in got]
    return found


def _register(monkeypatch: pytest.MonkeyPatch, name: str, run: Any = None, **flow: Any) -> None:
    job_type = job_types.JobType(name=name, run=run or (lambda payload: payload), timeout_seconds=5, flow=flow or None)
    monkeypatch.setitem(job_types._REGISTRY, name, job_type)


def _failing(payload: Any) -> Any:
    raise RuntimeError("always fails")


@pytest.mark.parametrize("level", list(Priority))
def test_an_enqueued_job_goes_to_its_prioritys_queue_and_its_message_says_so(aws, level):
    sent = enqueue("acme", JobRequest(JobSpec("echo"), priority=str(level)))

    assert isinstance(sent, JobMessage) and sent.level is level
    assert _held(aws) == _only_in(level)
    (body,) = _bodies(aws, level)
    assert body.get("priority") == level.carried  # a default job's message leaves it out, as before the lanes


def test_a_job_without_a_priority_goes_to_the_jobs_queue(aws):
    enqueue("acme", JobRequest(JobSpec("echo")))

    assert _held(aws) == _only_in(Priority.DEFAULT)


def test_a_bulk_request_sends_each_job_to_its_lane(aws):
    levels = [Priority.LOW, Priority.HIGH, None, Priority.HIGH, Priority.LOW, Priority.LOW] * 5

    outcomes = enqueue_many("acme", [JobRequest(JobSpec("echo", n), priority=level) for n, level in enumerate(levels)])

    assert all(isinstance(outcome, JobMessage) for outcome in outcomes)
    assert _held(aws) == {Priority.HIGH: 10, Priority.DEFAULT: 5, Priority.LOW: 15}
    assert sorted(body["payload"] for body in _bodies(aws, Priority.HIGH)) == [
        n for n, level in enumerate(levels) if level is Priority.HIGH
    ]


def test_a_types_priority_picks_the_lane_and_a_jobs_own_wins(aws, monkeypatch):
    _register(monkeypatch, "reindex", priority="low")

    enqueue("acme", JobRequest(JobSpec("reindex")))
    enqueue("acme", JobRequest(JobSpec("reindex"), priority="high"))

    assert _held(aws) == {Priority.HIGH: 1, Priority.DEFAULT: 0, Priority.LOW: 1}


def test_a_batchs_jobs_go_to_their_lanes(aws):
    request = batches.BatchRequest(
        jobs=[JobRequest(JobSpec("echo", n), priority=level) for n, level in enumerate(("high", None, "low", "high"))]
    )

    batches.create("acme", request)

    assert _held(aws) == {Priority.HIGH: 2, Priority.DEFAULT: 1, Priority.LOW: 1}


def test_a_far_future_jobs_schedule_targets_its_lanes_queue(scheduler_env):
    enqueue("acme", JobRequest(JobSpec("echo"), priority="high", delay_seconds=3_600))

    (listed,) = scheduler_env["scheduler"].list_schedules(GroupName=settings.SCHEDULE_GROUP)["Schedules"]
    target = scheduler_env["scheduler"].get_schedule(GroupName=settings.SCHEDULE_GROUP, Name=listed["Name"])["Target"]
    assert target["Arn"] == queue.lane_arn(Priority.HIGH) != queue.lane_arn(Priority.DEFAULT)
    assert json.loads(target["Input"])["priority"] == "high"


def test_a_schedule_of_a_high_type_fires_into_the_high_lane(scheduler_env, monkeypatch):
    _register(monkeypatch, "digest", priority="high")

    lifecycle.create("acme", ScheduleRequest(name="nightly", expression="cron(0 3 * * ? *)", job=JobSpec("digest")))

    (listed,) = scheduler_env["scheduler"].list_schedules(GroupName=settings.SCHEDULE_GROUP)["Schedules"]
    target = scheduler_env["scheduler"].get_schedule(GroupName=settings.SCHEDULE_GROUP, Name=listed["Name"])["Target"]
    assert target["Arn"] == queue.lane_arn(Priority.HIGH)
    assert json.loads(target["Input"])["priority"] == "high"  # each firing's message keeps its lane


def test_a_schedules_own_priority_wins_over_its_types_and_picks_its_firings_queue(scheduler_env, monkeypatch):
    _register(monkeypatch, "digest", priority="high")

    lifecycle.create(
        "acme",
        ScheduleRequest(name="weekly", expression="cron(0 3 ? * 1 *)", job=JobSpec("digest"), priority="low"),
    )

    (listed,) = scheduler_env["scheduler"].list_schedules(GroupName=settings.SCHEDULE_GROUP)["Schedules"]
    target = scheduler_env["scheduler"].get_schedule(GroupName=settings.SCHEDULE_GROUP, Name=listed["Name"])["Target"]
    assert target["Arn"] == queue.lane_arn(Priority.LOW)
    assert json.loads(target["Input"])["priority"] == "low"


def test_a_high_job_runs_from_its_lane_shows_its_priority_and_its_retry_stays_in_the_lane(aws, monkeypatch):
    _register(monkeypatch, "flaky", _failing)
    message = build_message("acme", JobRequest(JobSpec("flaky", max_attempts=2), priority="high"), time.time())
    queue.send(message)

    batch = poll({**aws, "lane": aws["lane_urls"][Priority.HIGH]}, url_key="lane")

    assert batch is not None and batch.failed == batch.message_ids  # handed back for its retry
    assert _held(aws) == _only_in(Priority.HIGH)  # the retry waits in the high lane, not the jobs queue
    shown = record(message.id)
    assert shown is not None and shown.status is Status.FAILED and shown.public()["priority"] == "high"


def test_a_dead_jobs_retry_and_redrive_go_back_to_its_lane(aws, monkeypatch):
    _register(monkeypatch, "doomed", _failing)
    message = build_message("acme", JobRequest(JobSpec("doomed", max_attempts=1), priority="low"), time.time())
    queue.send(message)
    poll({**aws, "lane": aws["lane_urls"][Priority.LOW]}, url_key="lane")
    assert (shown := record(message.id)) is not None and shown.status is Status.DEAD
    assert _held(aws) == _only_in(Priority.LOW, 0)

    retried = retry.retry("acme", message.id)

    assert retried.level is Priority.LOW
    assert _held(aws) == _only_in(Priority.LOW)


def test_a_waiting_jobs_resend_and_an_outcome_message_keep_the_jobs_lane(aws):
    message = build_message("acme", JobRequest(JobSpec("echo"), priority="high"), time.time())

    queue.send_waiting(message, 0, {})
    queue.send_outcomes(
        [(OutcomeMessage(message, Status.FAILED, time.time(), time.time(), error="boom"), 0)]  # its retry, too
    )
    queue.send_batch([(message, 0)])

    assert _held(aws) == _only_in(Priority.HIGH, 3)


def test_a_durable_jobs_child_goes_to_its_lane(aws, monkeypatch):
    _register(monkeypatch, "thumbnail", priority="low")
    parent = build_message("acme", JobRequest(JobSpec("echo")), time.time())

    prepared = children.prepared(
        StepKind.RUN_JOBS, "fan", [{"type": "echo", "priority": "high"}, {"type": "thumbnail"}], parent, 0, time.time()
    )
    children.send(prepared, time.time())

    assert [child.level for child in prepared.messages] == [Priority.HIGH, Priority.LOW]
    assert _held(aws) == {Priority.HIGH: 1, Priority.DEFAULT: 0, Priority.LOW: 1}


def test_a_child_with_a_priority_that_is_no_level_is_refused_naming_it(aws):
    parent = build_message("acme", JobRequest(JobSpec("echo")), time.time())

    with pytest.raises(children.InvalidChild, match="priority"):
        children.prepared(StepKind.RUN_JOB, "one", [{"type": "echo", "priority": "urgent"}], parent, 0, time.time())


def test_a_dead_letter_nobody_recorded_is_redriven_to_its_jobs_lane(aws):
    message = build_message("acme", JobRequest(JobSpec("echo"), priority="low"), time.time())
    aws["sqs"].send_message(QueueUrl=aws["dlq_url"], MessageBody=message.to_json())

    report = dead_letters.redrive(limit=10)

    assert report.redriven == [message.id]
    assert _held(aws) == _only_in(Priority.LOW)


def test_a_record_received_from_a_lane_is_handed_back_to_that_lane(aws):
    arn = "arn:aws:sqs:us-east-1:123456789012:{}"
    for level in Priority:
        assert queue.received_from(arn.format(level.queue_name(settings.names()))) == aws["lane_urls"][level]
    assert queue.received_from(arn.format(settings.BACKSTOP_NAME)) == aws["backstop_url"]


# The API: a priority that is no level is a 422 naming the field, and nothing is enqueued ---------------------


@pytest.fixture
def key(aws) -> str:
    return tenants.create_key("acme")


def test_a_job_with_a_priority_that_is_no_level_is_422_naming_priority(aws, key):
    status, body = answer("POST", "/v1/jobs", key, {"type": "echo", "priority": "urgent"})

    assert status == 422 and [each["field"] for each in body["fields"]] == ["priority"]
    assert _held(aws) == _only_in(Priority.DEFAULT, 0)


def test_a_bulk_job_with_a_bad_priority_is_rejected_naming_its_index_and_the_others_go_to_their_lanes(aws, key):
    jobs = [{"type": "echo", "priority": "high"}] * 3 + [{"type": "echo", "priority": 1}]

    status, body = answer("POST", "/v1/jobs:batch", key, {"jobs": jobs})

    assert status == 207 and body["results"][3]["field"] == "jobs[3].priority"
    assert _held(aws) == _only_in(Priority.HIGH, 3)


def test_a_batch_with_a_bad_priority_is_422_naming_its_job_and_sends_nothing(aws, key):
    jobs = [{"type": "echo", "priority": "high"}] * 3 + [{"type": "echo", "priority": "urgent"}]

    status, body = answer("POST", "/v1/batches", key, {"jobs": jobs})

    assert status == 422 and body["field"] == "jobs[3].priority"
    assert _held(aws) == _only_in(Priority.DEFAULT, 0)


def test_a_schedule_whose_job_has_a_bad_priority_is_422_naming_job_priority(scheduler_env, key):
    schedule = {"name": "n", "expression": "rate(1 hour)", "job": {"type": "echo", "priority": "urgent"}}

    status, body = answer("POST", "/v1/schedules", key, schedule)

    assert status == 422 and [each["field"] for each in body["fields"]] == ["job.priority"]


def test_a_jobs_view_shows_its_priority_once_a_worker_has_seen_it(aws, key):
    status, accepted = answer("POST", "/v1/jobs", key, {"type": "echo", "priority": "low"})
    assert status == 202
    poll({**aws, "lane": aws["lane_urls"][Priority.LOW]}, url_key="lane")

    status, shown = answer("GET", f"/v1/jobs/{accepted['id']}", key)

    assert status == 200 and shown["status"] == "succeeded" and shown["priority"] == "low"
    status, accepted = answer("POST", "/v1/jobs", key, {"type": "echo"})
    poll(aws)
    assert "priority" not in answer("GET", f"/v1/jobs/{accepted['id']}", key)[1]  # default: left out
