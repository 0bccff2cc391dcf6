"""A throttle end to end on moto: the API takes `throttle` and names the field it refuses, the message carries it, and
the worker starts at most `limit` of a key's jobs in any window of `period_seconds`, the rest waiting for their turns
(no attempt used, no receive budget spent) and starting in enqueue order, spread over the windows
(shared/worker/admit/throttle_turns.py, docs/decisions/throttle.md).

The worker's throttle and SQS (moto) read one virtual clock, moved on by the test while nothing is visible: minutes of
windows take a moment, and no assertion depends on the machine's speed."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from functions.api.handler import handler as api_handler
from local.events import FakeLambdaContext, http_api_event
from shared.flow import limits
from shared.flow.throttle import Throttle, starts_within_limit
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.message import JobMessage, UnreadableMessage
from shared.model.outcome import read_message
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.id_secret import id_secret
from shared.tenants import tenants
from shared.worker.admit import throttle_turns
from shared.worker.verdicts import WAITING_ATTRIBUTE, Waited
from tests.unit.worker_harness import VirtualClock, dead_letters, poll, record, send

TEN_PER_MINUTE = Throttle("partner", limit=10, period_seconds=60)


class _Clock(VirtualClock):
    """One clock for SQS and the throttle: `time()` reads it, `sleep()` moves it on."""

    def __init__(self, now: float) -> None:
        super().__init__(now)
        self._read = threading.local()

    def time(self) -> float:
        self._read.at = self.now
        return self.now

    def sleep(self, seconds: float) -> None:
        """Until `seconds` after this thread last read the clock: threads sleeping together move it once."""
        self.now = max(self.now, getattr(self._read, "at", self.now) + max(seconds, 0.0))

    def install(self, monkeypatch: pytest.MonkeyPatch) -> _Clock:
        super().install(monkeypatch)
        monkeypatch.setattr(throttle_turns, "time", self)
        return self


class _Starts:
    """A job type that records when each run started (on the virtual clock) and its payload, and takes 1 ms."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.runs: list[tuple[float, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, payload: Any, context: job_types.JobContext) -> Any:
        with self._lock:
            self.runs.append((self.clock.now, payload))
        time.sleep(0.001)
        return payload


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    return _Clock(time.time()).install(monkeypatch)


def _register(monkeypatch: pytest.MonkeyPatch, name: str, run: Any, **flow: Any) -> None:
    job_type = job_types.JobType(name=name, run=run, timeout_seconds=5, flow=flow or None)
    monkeypatch.setitem(job_types._REGISTRY, name, job_type)


def _send(aws: dict[str, Any], clock: _Clock, job_type: str, payloads: list[Any], **options: Any) -> list[JobMessage]:
    messages = []
    for payload in payloads:
        clock.now += 0.001  # distinct enqueue times: the order the turns follow
        message = build_message("acme", JobRequest(JobSpec(job_type, payload), **options), clock.now)
        send(aws, message.to_json())
        messages.append(message)
    return messages


def _drain(aws: dict[str, Any], clock: _Clock, until: float) -> None:
    """Poll like the event source until the virtual clock reaches `until`, moving it on a second while nothing is
    visible (bounded: one poll per virtual second at most, plus the polls that found messages)."""
    for _ in range(int(until - clock.now) * 20 + 100):
        if clock.now >= until:
            return
        if poll(aws) is None:
            clock.now += 1.0


# --- what a job says -------------------------------------------------------------------------------


def test_a_jobs_throttle_travels_in_its_message_and_is_checked_there(aws):
    message = build_message("acme", JobRequest(JobSpec("echo", 1), throttle=TEN_PER_MINUTE.to_dict()), time.time())

    assert read_message(message.to_json(), sent_at=0, secret=id_secret()).throttle == TEN_PER_MINUTE
    for bad in ({"key": "k", "limit": 0, "period_seconds": 1}, {"key": "k", "limit": 1}, "k:1/1"):
        with pytest.raises(UnreadableMessage, match="throttle"):
            JobMessage.from_data({**message.to_dict(), "throttle": bad}, sent_at=0, secret=id_secret())


@pytest.mark.parametrize(
    ("throttle", "field"),
    [
        ({"key": "k", "limit": 0, "period_seconds": 60}, "throttle.limit"),
        ({"key": "k", "limit": 1001, "period_seconds": 60}, "throttle.limit"),
        ({"key": "k", "limit": 5, "period_seconds": 0}, "throttle.period_seconds"),
        ({"key": "k", "limit": 5, "period_seconds": 86_401}, "throttle.period_seconds"),
        ({"key": "k" * 129, "limit": 5, "period_seconds": 60}, "throttle.key"),
        ({"key": "k", "limit": 5}, "throttle.period_seconds"),
    ],
)
def test_the_api_refuses_a_throttle_out_of_range_naming_its_field(aws, throttle, field):
    key = tenants.create_key("acme")

    answer = api_handler(
        http_api_event("POST", "/v1/jobs", {"type": "echo", "throttle": throttle}, key), FakeLambdaContext()
    )

    assert answer["statusCode"] == 422
    assert [named["field"] for named in json.loads(answer["body"])["fields"]] == [field]


def test_the_api_takes_a_throttle_on_a_job_and_on_a_batchs_jobs(aws):
    key = tenants.create_key("acme")
    throttle = TEN_PER_MINUTE.to_dict()

    job = api_handler(
        http_api_event("POST", "/v1/jobs", {"type": "echo", "throttle": throttle}, key), FakeLambdaContext()
    )
    batch = api_handler(
        http_api_event("POST", "/v1/batches", {"jobs": [{"type": "echo", "throttle": throttle}] * 2}, key),
        FakeLambdaContext(),
    )
    bad = api_handler(
        http_api_event("POST", "/v1/batches", {"jobs": [{"type": "echo", "throttle": {**throttle, "limit": 0}}]}, key),
        FakeLambdaContext(),
    )

    assert job["statusCode"] == 202
    assert batch["statusCode"] == 201
    assert bad["statusCode"] == 422
    assert [named["field"] for named in json.loads(bad["body"])["fields"]] == ["jobs[0].throttle.limit"]
    sent = aws["sqs"].receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"])["throttle"] for m in sent] == [throttle] * 3


# --- the worker --------------------------------------------------------------------------------------


def test_ten_a_minute_holds_even_when_each_job_takes_a_millisecond(aws, monkeypatch, clock):
    starts = _Starts(clock)
    _register(monkeypatch, "quick", starts)
    messages = _send(aws, clock, "quick", list(range(25)), throttle=TEN_PER_MINUTE.to_dict())
    began = clock.now

    _drain(aws, clock, until=began + 10)

    assert len(starts.runs) == 10  # the rest wait for the next window, though every job took 1 ms
    claimed = [m for m in messages if record(m.id).status is not Status.QUEUED]
    assert len(claimed) == 10  # the waiting ones are not even claimed: their records say what they wait for
    assert {record(m.id).queued_waiting_for["kind"] for m in messages if m not in claimed} == {"throttle"}

    _drain(aws, clock, until=began + 200)

    assert starts_within_limit([at for at, _ in starts.runs], TEN_PER_MINUTE)
    assert [(record(m.id).status, record(m.id).attempts) for m in messages] == [(Status.SUCCEEDED, 1)] * 25
    assert dead_letters(aws) == []


def test_a_backlog_starts_in_enqueue_order_spread_over_the_windows(aws, monkeypatch, clock):
    starts = _Starts(clock)
    _register(monkeypatch, "quick", starts)
    throttle = Throttle("partner", limit=3, period_seconds=10)
    _send(aws, clock, "quick", list(range(10)), throttle=throttle.to_dict())
    began = clock.now

    _drain(aws, clock, until=began + 60)

    in_enqueue_order = [at for at, _ in sorted(starts.runs, key=lambda run: run[1])]
    assert in_enqueue_order == sorted(in_enqueue_order)  # none started before a job enqueued ahead of it
    windows = [int((at - began) // throttle.period_seconds) for at, _ in starts.runs]
    assert windows == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]  # a window's worth in each, not all at one window's edge
    assert starts_within_limit([at for at, _ in starts.runs], throttle)


def test_a_waiting_job_is_sent_again_carrying_its_turn_and_uses_no_attempt(aws, monkeypatch, clock):
    _register(monkeypatch, "quick", _Starts(clock))
    first, second = _send(aws, clock, "quick", [1, 2], throttle={"key": "k", "limit": 1, "period_seconds": 60})

    batch = poll(aws)

    assert batch is not None and batch.failed == []  # the waiting one was sent again, not handed back
    assert record(first.id).status is Status.SUCCEEDED and record(second.id).status is Status.QUEUED
    clock.now += 60
    (again,) = aws["sqs"].receive_message(
        QueueUrl=aws["queue_url"], MessageAttributeNames=["All"], AttributeNames=["All"]
    )["Messages"]
    waited = Waited.from_attribute(again["MessageAttributes"][WAITING_ATTRIBUTE]["StringValue"])
    assert json.loads(again["Body"])["id"] == second.id and again["Attributes"]["ApproximateReceiveCount"] == "1"
    assert waited is not None and waited.why == "its throttle" and waited.turn is not None
    assert waited.turn[0] >= clock.now - 60 + 60 - limits.THROTTLE_START_GRACE_SECONDS - 1


def test_a_waiting_jobs_view_says_it_waits_for_its_throttle_written_once_not_per_hand_back(aws, monkeypatch, clock):
    from shared.store.jobs import waiting_jobs
    from tests.unit.api_harness import answer

    _register(monkeypatch, "quick", _Starts(clock))
    writes: list[str] = []
    real_show = waiting_jobs.show_queued_wait
    monkeypatch.setattr(
        waiting_jobs, "show_queued_wait", lambda message, shown: writes.append(message.id) or real_show(message, shown)
    )
    waits: list[str] = []
    real_wait = throttle_turns.waiting.wait
    monkeypatch.setattr(
        throttle_turns.waiting, "wait", lambda job, *args, **kw: waits.append(job.id) or real_wait(job, *args, **kw)
    )
    # One start per half hour: the second job's turn is beyond SQS's 15-minute delay, so it waits more than once.
    first, second = _send(aws, clock, "quick", [1, 2], throttle={"key": "k", "limit": 1, "period_seconds": 1800})
    key = tenants.create_key("acme")

    _drain(aws, clock, until=clock.now + 1000)

    status, view = answer("GET", f"/v1/jobs/{second.id}", key)
    assert (status, view["status"], view["attempts"]) == (200, "queued", 0)
    assert view["waiting_for"]["kind"] == "throttle" and view["waiting_for"]["key"] == "k"
    assert view["waiting_for"]["until"] >= record(first.id).started_at + 1800 - limits.THROTTLE_START_GRACE_SECONDS - 1

    _drain(aws, clock, until=clock.now + 1000)

    status, view = answer("GET", f"/v1/jobs/{second.id}", key)
    assert view["status"] == "succeeded" and "waiting_for" not in view
    assert waits.count(second.id) >= 2 and writes == [second.id]  # one write, however many times it waited


def test_a_types_throttle_reads_its_key_from_the_payload_and_limits_each_key_apart(aws, monkeypatch, clock):
    starts = _Starts(clock)
    _register(monkeypatch, "per-account", starts, throttle={"key": "account", "limit": 1, "period_seconds": 30})
    _send(aws, clock, "per-account", [{"account": "a", "n": n} for n in range(3)] + [{"account": "b", "n": 0}])
    # The API refuses a payload without the field, and resolves the type's throttle into the message; a schedule's
    # run carries none, and the worker reads the type's (here: from a payload that has no key).
    unreadable = build_message("acme", JobRequest(JobSpec("per-account", {"account": "c"})), clock.now)
    unreadable_body = {**unreadable.to_dict(), "payload": {"no": "account"}}
    send(aws, json.dumps({name: value for name, value in unreadable_body.items() if name != "throttle"}))
    began = clock.now

    _drain(aws, clock, until=began + 100)

    by_account = {
        account: [at for at, payload in starts.runs if payload.get("account") == account] for account in ("a", "b")
    }
    assert len(by_account["a"]) == 3 and len(by_account["b"]) == 1
    assert by_account["b"][0] < began + 1  # not held behind account a's turns
    assert starts_within_limit(by_account["a"], Throttle("a", 1, 30))
    assert record(unreadable.id).status is Status.DEAD and "throttle key" in record(unreadable.id).error


def test_a_jobs_own_throttle_wins_over_its_types(monkeypatch):
    _register(monkeypatch, "per-account", None, throttle={"key": "account", "limit": 1, "period_seconds": 30})
    message = JobMessage(
        id="j", tenant="acme", type="per-account", payload={"account": 7}, max_attempts=1, enqueued_at=1
    )

    assert throttle_turns.throttle_of(message) == Throttle("7", 1, 30)
    assert throttle_turns.throttle_of(JobMessage(**{**message.__dict__, "throttle": TEN_PER_MINUTE})) == TEN_PER_MINUTE


def test_while_the_store_fails_a_throttled_job_waits_and_never_starts_uncounted(aws, monkeypatch, clock):
    from botocore.exceptions import ClientError

    starts = _Starts(clock)
    _register(monkeypatch, "quick", starts)
    (message,) = _send(aws, clock, "quick", [1], throttle=TEN_PER_MINUTE.to_dict())

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "down"}}, "UpdateItem")

    monkeypatch.setattr(throttle_turns.throttle_items, "take_turns", failing)
    batch = poll(aws)

    assert batch is not None and len(batch.failed) == 1  # handed back, to take its turn later
    assert starts.runs == [] and record(message.id) is None


# --- the CLI ----------------------------------------------------------------------------------------


def test_the_clis_throttle_option_reads_key_limit_and_period():
    from cli.common import CliError
    from cli.flow import throttle_option

    assert throttle_option("stripe:10/60") == {"key": "stripe", "limit": 10, "period_seconds": 60}
    assert throttle_option("tenant:42:2/1") == {"key": "tenant:42", "limit": 2, "period_seconds": 1}
    for bad in ("stripe", "stripe:10", ":10/60", "stripe:ten/60", "stripe:10/"):
        with pytest.raises(CliError, match="KEY:LIMIT/SECONDS"):
            throttle_option(bad)


# --- a schedule's runs ----------------------------------------------------------------------------------


def test_a_schedules_own_throttle_rides_its_firings_and_its_triggered_runs(scheduler_env):
    from datetime import UTC, datetime

    from shared import settings
    from shared.errors import InvalidRequest
    from shared.schedules import definitions, lifecycle, runs

    throttle = {"key": "nightly-export", "limit": 1, "period_seconds": 3600}
    request = definitions.ScheduleRequest(
        name="nightly", expression="cron(0 0 * * ? *)", job=JobSpec("echo", {"n": 1}), throttle=throttle
    )
    lifecycle.create("acme", request)

    entry = scheduler_env["scheduler"].get_schedule(
        Name=lifecycle.scheduler_name("acme", "nightly"), GroupName=settings.SCHEDULE_GROUP
    )
    firing = read_message(entry["Target"]["Input"], sent_at=time.time(), secret=id_secret())
    assert firing.throttle == Throttle.parse(throttle)
    triggered = runs.trigger("acme", "nightly")
    (sent,) = scheduler_env["sqs"].receive_message(QueueUrl=scheduler_env["queue_url"])["Messages"]
    assert json.loads(sent["Body"])["id"] == triggered.id and json.loads(sent["Body"])["throttle"] == throttle

    lifecycle.update("acme", "nightly", {"job": {"throttle": None}})
    entry = scheduler_env["scheduler"].get_schedule(
        Name=lifecycle.scheduler_name("acme", "nightly"), GroupName=settings.SCHEDULE_GROUP
    )
    assert "throttle" not in json.loads(entry["Target"]["Input"])
    bad = definitions.ScheduleRequest(**{**request.__dict__, "name": "b", "throttle": {**throttle, "limit": 0}})
    with pytest.raises(InvalidRequest) as refused:
        definitions.definition("acme", bad, datetime.now(UTC))
    assert refused.value.field == "job.throttle.limit"


def test_the_api_takes_a_schedules_throttle_and_names_the_field_it_refuses(scheduler_env):
    key = tenants.create_key("acme")
    job = {"type": "echo", "throttle": {"key": "k", "limit": 2, "period_seconds": 0}}
    body = {"name": "nightly", "expression": "cron(0 0 * * ? *)", "job": job}

    refused = api_handler(http_api_event("POST", "/v1/schedules", body, key), FakeLambdaContext())
    job["throttle"]["period_seconds"] = 60
    created = api_handler(http_api_event("POST", "/v1/schedules", body, key), FakeLambdaContext())

    assert refused["statusCode"] == 422
    assert [named["field"] for named in json.loads(refused["body"])["fields"]] == ["job.throttle.period_seconds"]
    assert created["statusCode"] == 201
    assert json.loads(created["body"])["job"]["throttle"] == job["throttle"]
