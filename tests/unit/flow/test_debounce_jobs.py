"""Debounce end to end on moto: the API takes `debounce` (on a job, in a bulk request, as a type's default) and names
the field it refuses; each job's arrival is recorded in its key's group and its message sent delayed until the group
is due; at the worker the group's last job runs with its payload, and every other ends `skipped` naming it
(shared/worker/admit/debounced.py, docs/decisions/debounce.md).

SQS (moto), the API's enqueue and the worker's debounce read one virtual clock, moved on by the test while nothing
is visible: no assertion depends on the machine's speed."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from shared.jobs import enqueue as enqueue_module
from shared.jobs import job_types
from shared.model.states import Status
from shared.store.flow import debounce_items
from shared.tenants import tenants
from shared.worker.admit import debounced
from tests.unit.api_harness import answer as _api
from tests.unit.worker_harness import VirtualClock, dead_letters, poll, record


class _Clock(VirtualClock):
    """One clock for SQS, the API's enqueue and the worker's debounce: `time()` reads it."""

    def time(self) -> float:
        return self.now

    def install(self, monkeypatch: pytest.MonkeyPatch) -> _Clock:
        super().install(monkeypatch)
        monkeypatch.setattr(enqueue_module, "time", self)
        monkeypatch.setattr(debounced, "time", self)
        return self


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    return _Clock(time.time()).install(monkeypatch)


@pytest.fixture
def key(aws) -> str:
    return tenants.create_key("acme")


def _drain(aws: dict[str, Any], clock: _Clock, until: float) -> None:
    """Poll like the event source until the clock reaches `until`, moving it on a second while nothing is visible."""
    for _ in range(int(until - clock.now) * 20 + 100):
        if clock.now >= until:
            return
        if poll(aws) is None:
            clock.now += 1.0


def _debounced(n: int, **debounce: Any) -> dict[str, Any]:
    return {"type": "echo", "payload": {"n": n}, "debounce": {"key": "user-7", "period_seconds": 2, **debounce}}


def test_ten_jobs_within_a_second_run_once_the_last_payload_and_nine_end_skipped_naming_it(aws, clock, key):
    ids = []
    for n in range(10):
        status, accepted = _api("POST", "/v1/jobs", key, _debounced(n))
        assert status == 202
        ids.append(accepted["id"])
        clock.now += 0.1

    _drain(aws, clock, until=clock.now + 10)

    last = record(ids[-1])
    assert last is not None and last.status == Status.SUCCEEDED and last.result == {"n": 9}
    for job_id in ids[:-1]:
        status, view = _api("GET", f"/v1/jobs/{job_id}", key)
        assert (status, view["status"], view["attempts"]) == (200, "skipped", 0)
        assert ids[-1] in view["reason"]
    assert dead_letters(aws) == []


def test_max_wait_runs_a_group_under_a_steady_stream(aws, clock, key):
    ids = []
    began = clock.now
    for n in range(12):  # one every second for 12 s: never the 3 s lull the period asks for
        ids.append(_api("POST", "/v1/jobs", key, _debounced(n, period_seconds=3, max_wait_seconds=5))[1]["id"])
        clock.now += 1.0
        poll(aws)

    _drain(aws, clock, until=clock.now + 10)

    ran = [job_id for job_id in ids if record(job_id).status == Status.SUCCEEDED]
    assert len(ran) >= 2 and ran[-1] == ids[-1]  # without max_wait one run, 3 s after the stream
    first_run = record(ran[0])
    assert first_run.started_at <= began + 5 + 2  # its group's max_wait, and SQS's whole seconds
    assert {record(job_id).status for job_id in ids} == {Status.SUCCEEDED, Status.SKIPPED}


def test_a_bulk_requests_debounced_jobs_are_one_group(aws, clock, key):
    status, bulk = _api("POST", "/v1/jobs:batch", key, {"jobs": [_debounced(n) for n in range(3)]})
    assert status == 202
    ids = [result["id"] for result in bulk["results"]]

    _drain(aws, clock, until=clock.now + 6)

    assert [record(job_id).status for job_id in ids] == [Status.SKIPPED, Status.SKIPPED, Status.SUCCEEDED]


def test_a_types_debounce_reads_its_key_from_the_payload_and_debounces_each_key_apart(aws, clock, key, monkeypatch):
    job_type = job_types.JobType(
        name="sync",
        run=lambda payload, context: payload,
        timeout_seconds=5,
        flow={"debounce": {"key": "user", "period_seconds": 2}},
    )
    monkeypatch.setitem(job_types._REGISTRY, "sync", job_type)
    ids = [_api("POST", "/v1/jobs", key, {"type": "sync", "payload": {"user": user}})[1]["id"] for user in "abab"]

    _drain(aws, clock, until=clock.now + 6)

    assert [record(job_id).status for job_id in ids] == [Status.SKIPPED] * 2 + [Status.SUCCEEDED] * 2
    status, refused = _api("POST", "/v1/jobs", key, {"type": "sync", "payload": {}})
    assert (status, [named["field"] for named in refused["fields"]]) == (422, ["payload"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"debounce": {"key": "k", "period_seconds": 0}}, "debounce.period_seconds"),
        ({"debounce": {"key": "k", "period_seconds": 86_401}}, "debounce.period_seconds"),
        ({"debounce": {"key": "k" * 129, "period_seconds": 5}}, "debounce.key"),
        ({"debounce": {"key": "k", "period_seconds": 10, "max_wait_seconds": 5}}, "debounce.max_wait_seconds"),
        ({"debounce": {"key": "k", "period_seconds": 5}, "delay_seconds": 10}, "debounce"),
        (
            {"debounce": {"key": "k", "period_seconds": 1}, "throttle": {"key": "k", "limit": 1, "period_seconds": 60}},
            "throttle",
        ),
    ],
)
def test_bad_debounce_input_is_a_422_naming_the_field_and_nothing_is_enqueued(aws, key, body, field):
    status, refused = _api("POST", "/v1/jobs", key, {"type": "echo", **body})

    assert status == 422
    assert [named["field"] for named in refused["fields"]] == [field]
    assert aws["sqs"].receive_message(QueueUrl=aws["queue_url"]).get("Messages", []) == []
    assert debounce_items.read("acme", "k") is None


def test_a_batch_members_bad_debounce_is_a_422_naming_the_member_and_nothing_is_written(aws, key):
    jobs = [_debounced(0), {**_debounced(1), "delay_seconds": 5}]
    status, refused = _api("POST", "/v1/batches", key, {"jobs": jobs})

    assert (status, [named["field"] for named in refused["fields"]]) == (422, ["jobs[1].debounce"])
    assert aws["sqs"].receive_message(QueueUrl=aws["queue_url"]).get("Messages", []) == []
    assert debounce_items.read("acme", "user-7") is None


def test_a_failed_send_puts_the_group_back_so_the_job_it_superseded_runs(aws, clock, key, monkeypatch):
    first = _api("POST", "/v1/jobs", key, _debounced(0))[1]["id"]
    with monkeypatch.context() as failing:
        failing.setattr(enqueue_module.queue, "send", _failing_send)
        status, _ = _api("POST", "/v1/jobs", key, _debounced(1))

    _drain(aws, clock, until=clock.now + 6)

    assert status == 503
    assert record(first).status == Status.SUCCEEDED


def _failing_send(*_: Any, **__: Any) -> None:
    from botocore.exceptions import ClientError

    raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "injected"}}, "SendMessage")


def test_while_the_store_fails_a_debounced_job_is_handed_back_never_run_unclaimed(aws, clock, key, monkeypatch):
    job_id = _api("POST", "/v1/jobs", key, _debounced(0))[1]["id"]
    clock.now += 3

    def unavailable(*_: Any, **__: Any) -> None:
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "injected"}}, "GetItem")

    monkeypatch.setattr(debounce_items, "settle", unavailable)
    batch = poll(aws)

    assert batch is not None and len(batch.failed) == 1
    assert record(job_id) is None


def test_a_debounced_message_carries_its_debounce_and_arrival_number(aws, clock, key):
    _api("POST", "/v1/jobs", key, _debounced(0))
    clock.now += 3

    body = json.loads(aws["sqs"].receive_message(QueueUrl=aws["queue_url"])["Messages"][0]["Body"])

    assert (body["debounce"], body["debounce_seq"]) == ({"key": "user-7", "period_seconds": 2}, 1)


# --- the clients --------------------------------------------------------------------------------------


def test_the_clis_debounce_option_reads_key_period_and_max_wait():
    from cli.common import CliError
    from cli.flow import debounce_option

    assert debounce_option("user-7:30") == {"key": "user-7", "period_seconds": 30}
    assert debounce_option("tenant:42:3/6") == {"key": "tenant:42", "period_seconds": 3, "max_wait_seconds": 6}
    for bad in ("user-7", ":30", "user-7:thirty", "user-7:30/", "user-7:30/six"):
        with pytest.raises(CliError, match="KEY:SECONDS"):
            debounce_option(bad)


def test_the_python_sdks_debounce_has_the_apis_fields():
    from client.types import Debounce, JobSpec
    from functions.api.models import DebounceIn

    assert "debounce" in JobSpec.__optional_keys__
    assert set(Debounce.__required_keys__) == set(DebounceIn.__required_keys__) == {"key", "period_seconds"}
    assert set(Debounce.__optional_keys__) == set(DebounceIn.__optional_keys__) == {"max_wait_seconds"}
