"""Routes that touch many items cost what they touch (moto, the API handler in-process): each takes a
unit of the tenant's rate limit per item it writes, answers at once when there is nothing to write,
and never brings back whole items it does not need. Batch cancel (R1), the heavy reads of a filtered
batch listing and of a bulk retry (R5), bulk retry, backfill, batch create, and the operator's redrive."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared import ids, settings
from shared.batches import batches
from shared.errors import RateLimited
from shared.jobs.enqueue import JobRequest, enqueue
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.operations import dead_letters
from shared.schedules import definitions, lifecycle
from shared.store import keys
from shared.store.batches import batch_items, batch_members
from shared.store.batches.batch_members import MemberState
from shared.store.id_secret import id_secret
from shared.store.jobs import job_claims, job_items, job_store
from shared.tenants import quotas, rate_limit, tenants
from shared.worker.delivery import Delivery
from tests.unit.api_harness import answer as _api
from tests.unit.worker_harness import work


@pytest.fixture
def key(aws) -> str:
    return tenants.create_key("acme")


@pytest.fixture
def units(monkeypatch) -> list[int]:
    """Every count the enqueue rate limit is asked to admit (admitted or not), in order."""
    asked: list[int] = []
    real = rate_limit.check

    def counted(tenant: str, count: int = 1) -> None:
        asked.append(count)
        real(tenant, count)

    monkeypatch.setattr(rate_limit, "check", counted)
    return asked


@pytest.fixture
def job_writes(monkeypatch) -> list[dict[str, Any]]:
    """The parameters of every write of a job item (job_items.write is the one writer of job records)."""
    seen: list[dict[str, Any]] = []
    real = job_items.write

    def recorded(**params: Any) -> Any:
        seen.append(params)
        return real(**params)

    monkeypatch.setattr(job_items, "write", recorded)
    return seen


def _batch(key: str, size: int, **fields: Any) -> str:
    status, created = _api("POST", "/v1/batches", key, {"jobs": [{"type": "echo"}] * size, **fields})
    assert status == 201, created
    return created["id"]


def _member_message(batch_id: str, index: int) -> JobMessage:
    return JobMessage.of(
        JobSpec("echo", max_attempts=3),
        job_id=ids.child_id(id_secret(), "acme", batch_id, str(index)),
        tenant="acme",
        enqueued_at=time.time(),
    )


# --- batch cancel (R1) ----------------------------------------------------------------------------------


def _written_batch(size: int) -> str:
    """A batch's item as its create writes it, its jobs not sent (what a cancel reads is the item)."""
    now = time.time()
    batch_id = ids.batch_id(id_secret(), "acme", now)
    batch_items.create(batch_id, "acme", size, now, description=None, callbacks={})
    return batch_id


def _all_succeeded(aws: dict[str, Any], batch_id: str, size: int) -> None:
    """Every member's end counted, as the worker's marks leave them (80 members a write, to be quick)."""
    for start in range(0, size, 80):
        chunk = range(start, min(size, start + 80))
        aws["dynamodb"].update_item(
            TableName=settings.TABLE_NAME,
            Key=keys.item_key(keys.batch_key(batch_id)),
            UpdateExpression="SET "
            + ", ".join(f"#m{index} = :done" for index in chunk)
            + " ADD succeeded :count, pending :minus",
            ExpressionAttributeNames={f"#m{index}": batch_members.member_attribute(index) for index in chunk},
            ExpressionAttributeValues={
                ":done": {"S": "S"},
                ":count": {"N": str(len(chunk))},
                ":minus": {"N": str(-len(chunk))},
            },
        )


def test_R1_a_finished_batch_cancelled_three_times_makes_no_member_write_and_answers_409(aws, key, job_writes, units):
    batch_id = _written_batch(1_000)
    _all_succeeded(aws, batch_id, 1_000)
    finished = batch_items.settle(batch_items.get(batch_id), time.time())
    assert (finished.status, finished.pending) == ("succeeded", 0)
    job_writes.clear()
    units.clear()

    answers = [_api("POST", f"/v1/batches/{batch_id}/cancel", key) for _ in range(3)]

    assert [status for status, _ in answers] == [409, 409, 409]
    assert all(body["error"] == "conflict" and "already finished" in body["message"] for _, body in answers)
    assert job_writes == []  # not one member's record written (the old cancel wrote 1,000 per call)
    assert units == [1, 1, 1]
    shown = _api("GET", f"/v1/batches/{batch_id}", key)[1]
    assert (shown["status"], shown["succeeded"], shown["cancelled"]) == ("succeeded", 1_000, 0)  # never relabelled
    assert "cancelled_at" not in shown


def test_R1_a_running_batch_cancel_writes_only_its_pending_members_and_costs_a_unit_each(aws, key, job_writes, units):
    batch_id = _batch(key, 10, on_complete={"type": "echo"})
    for index in range(3):  # three ended
        batch_members.mark(batch_id, index, MemberState(batch_members.DONE))
    member = _member_message(batch_id, 3)  # one running under a live lease
    assert isinstance(job_claims.claim(member, "a-delivery", time.time(), 300), job_claims.Claimed)
    job_writes.clear()
    units.clear()

    status, cancelled = _api("POST", f"/v1/batches/{batch_id}/cancel", key)

    assert status == 200
    assert units == [7]  # the seven pending members, taken before any write
    written = sorted(params["Key"]["pk"]["S"] for params in job_writes)
    pending_ids = [ids.child_id(id_secret(), "acme", batch_id, str(index)) for index in range(3, 10)]
    assert written == sorted(f"job#{job_id}" for job_id in pending_ids)  # never the three that ended
    assert all("ReturnValuesOnConditionCheckFailure" not in params for params in job_writes)
    assert all(params.get("ReturnValues") == "UPDATED_NEW" for params in job_writes)
    assert (cancelled["status"], cancelled["cancelled"], cancelled["pending"], cancelled["succeeded"]) == (
        "cancelled",
        6,
        1,  # the running one ends on its own, and is counted then
        3,
    )
    assert job_store.get(pending_ids[0]).status is Status.RUNNING
    assert {job_store.get(job_id).status for job_id in pending_ids[1:]} == {Status.CANCELLED}


def test_R1_a_cancelled_batch_answers_again_at_once_with_no_member_write(aws, key, job_writes, units):
    batch_id = _batch(key, 5)
    first = _api("POST", f"/v1/batches/{batch_id}/cancel", key)
    job_writes.clear()
    units.clear()

    again = _api("POST", f"/v1/batches/{batch_id}/cancel", key)

    assert first[0] == again[0] == 200
    assert (again[1]["status"], again[1]["cancelled"]) == ("cancelled", 5)
    assert job_writes == [] and units == [1]


def test_a_batch_cancel_cut_short_is_finished_by_the_next_one(aws, key, monkeypatch):
    """A cancel that died after marking the batch cancelled, before its members: the next cancel writes them."""
    batch_id = _batch(key, 4)
    monkeypatch.setattr(batches, "_writers", _Dying())
    with pytest.raises(RuntimeError):
        batches.cancel("acme", batch_id)
    monkeypatch.undo()
    assert batch_items.get(batch_id).status == "cancelled"

    status, cancelled = _api("POST", f"/v1/batches/{batch_id}/cancel", key)

    assert (status, cancelled["cancelled"], cancelled["pending"]) == (200, 4, 0)


class _Dying:
    def map(self, *args: Any) -> Any:
        raise RuntimeError("the request died here")


def test_a_batch_cancel_over_the_rate_limit_writes_nothing(aws, key, job_writes, monkeypatch):
    batch_id = _batch(key, 5)
    asked = _refusing(monkeypatch)
    job_writes.clear()

    status, body = _api("POST", f"/v1/batches/{batch_id}/cancel", key)

    assert (status, body["error"]) == (429, "rate_limited")
    assert asked == [5]
    assert job_writes == []
    assert batch_items.get(batch_id).status == "running"


def _refusing(monkeypatch) -> list[int]:
    """A tenant over its rate: every check refuses; the counts asked, in order."""
    asked: list[int] = []

    def refuse(tenant: str, count: int = 1) -> None:
        asked.append(count)
        raise RateLimited(1)

    monkeypatch.setattr(rate_limit, "check", refuse)
    return asked


# --- heavy reads (R5) -------------------------------------------------------------------------------------


def test_R5_a_filtered_batch_listing_is_metered_as_a_heavy_read(aws, key, monkeypatch):
    metered: list[str] = []
    monkeypatch.setattr(rate_limit, "check_heavy_read", metered.append)
    _batch(key, 1)

    assert _api("GET", "/v1/batches", key)[0] == 200
    assert metered == []  # unfiltered: one page of the index, as asked
    assert _api("GET", "/v1/batches", key, query={"status": "running"})[0] == 200
    assert metered == ["acme"]


def test_R5_a_filtered_batch_listing_answers_429_once_the_read_meter_is_spent(aws, key):
    answers = Counter(
        _api("GET", "/v1/batches", key, query={"status": "running"})[0]
        for _ in range(rate_limit.settings.HEAVY_READS_BURST + 3)
    )
    assert answers[429] >= 1 and answers[200] >= rate_limit.settings.HEAVY_READS_BURST


def test_R5_a_bulk_retry_meters_its_index_read_before_reading_even_when_it_finds_nothing(aws, key, monkeypatch):
    from shared.jobs import listing

    order: list[str] = []
    monkeypatch.setattr(rate_limit, "check_heavy_read", lambda tenant: order.append("metered"))
    real_read = listing.read_index
    monkeypatch.setattr(listing, "read_index", lambda *a, **k: order.append("read") or real_read(*a, **k))

    status, body = _api("POST", "/v1/jobs:retry", key, {})

    assert (status, body["retried"]) == (200, 0)
    assert order == ["metered", "read"]


def test_R5_a_bulk_retry_over_the_read_meter_reads_nothing(aws, key, monkeypatch):
    from shared.jobs import listing

    reads: list[Any] = []
    monkeypatch.setattr(listing, "read_index", lambda *a, **k: reads.append(a))
    for _ in range(rate_limit.settings.HEAVY_READS_BURST):
        rate_limit.check_heavy_read("acme")

    status, body = _api("POST", "/v1/jobs:retry", key, {})

    assert status == 429 and body["error"] == "rate_limited"
    assert reads == []


# --- bulk retry -------------------------------------------------------------------------------------------


def _dead(tenant: str = "acme") -> str:
    message = enqueue(tenant, JobRequest(JobSpec("fail", payload={"times": 9}, max_attempts=1)))
    assert work(message, Delivery(message_id=f"m-{message.id}", body=message.to_json())) == "dead"
    return message.id


def test_a_bulk_retry_costs_a_unit_per_job_it_resets_and_a_refusal_brings_no_record_back(aws, key, units, job_writes):
    dead = [_dead() for _ in range(2)]
    unrunnable = ids.timed_id(id_secret(), "acme")  # dead with no payload recorded: its reset is refused
    job_store.record_dead({"id": unrunnable, "tenant": "acme"}, "unreadable message", time.time())
    units.clear()
    job_writes.clear()

    status, body = _api("POST", "/v1/jobs:retry", key, {})

    assert status == 200 and sorted(body["ids"]) == sorted(dead)
    assert body["skipped"] == [
        {"id": unrunnable, "reason": "its payload was not recorded (a record older than payload recording)"}
    ]
    assert units == [3]  # every dead job found, before any reset
    resets = [params for params in job_writes if "attempt_budget" in params["UpdateExpression"]]
    assert len(resets) == 3
    assert all("ReturnValuesOnConditionCheckFailure" not in params for params in resets)


def test_a_bulk_retry_that_finds_nothing_answers_at_once(aws, key, units, job_writes):
    status, body = _api("POST", "/v1/jobs:retry", key, {})

    assert (status, body["retried"], body["more"]) == (200, 0, False)
    assert units == [] and job_writes == []


# --- batch create ------------------------------------------------------------------------------------------


def test_a_batch_create_costs_a_unit_per_job_and_callback_it_sends(aws, key, units):
    job = {"type": "echo", "on_success": {"type": "echo"}}
    assert _api("POST", "/v1/batches", key, {"jobs": [job] * 3, "on_complete": {"type": "echo"}})[0] == 201
    assert units == [3 * 2 + 1]


def test_a_batch_create_over_the_rate_limit_writes_and_sends_nothing(aws, key, monkeypatch):
    asked = _refusing(monkeypatch)

    status, body = _api("POST", "/v1/batches", key, {"jobs": [{"type": "echo"}] * 3})

    assert (status, body["error"]) == (429, "rate_limited")
    assert asked == [3]
    assert _api("GET", "/v1/batches", key)[1]["batches"] == []
    assert _visible(aws) == 0


def _visible(aws: dict[str, Any]) -> int:
    answer = aws["sqs"].get_queue_attributes(QueueUrl=aws["queue_url"], AttributeNames=["ApproximateNumberOfMessages"])
    return int(answer["Attributes"]["ApproximateNumberOfMessages"])


# --- backfill ----------------------------------------------------------------------------------------------


def test_a_backfill_costs_a_unit_per_run_and_a_window_without_a_firing_answers_at_once(scheduler_env, key, units):
    lifecycle.create("acme", definitions.ScheduleRequest("tick", "rate(1 minute)", JobSpec("echo")))
    end = datetime.now(UTC)
    units.clear()

    status, body = _api(
        "POST",
        "/v1/schedules/tick:backfill",
        key,
        {"start": (end - timedelta(minutes=3)).isoformat(), "end": end.isoformat()},
    )
    assert status == 202 and len(body["runs"]) == 3
    assert units == [3]

    units.clear()
    hourly = definitions.ScheduleRequest("hourly", "cron(0 * * * ? *)", JobSpec("echo"))
    lifecycle.create("acme", hourly)
    units.clear()
    top = end.replace(minute=0, second=0, microsecond=0)
    quiet = {"start": (top + timedelta(seconds=1)).isoformat(), "end": (top + timedelta(seconds=2)).isoformat()}
    assert _api("POST", "/v1/schedules/hourly:backfill", key, quiet) == (202, {"runs": []})
    assert units == []


# --- the operator's redrive --------------------------------------------------------------------------------


def test_the_operators_redrive_is_not_metered_against_the_tenant(aws, key):
    """Redrive is the operator's (AWS credentials, the CLI); no tenant key reaches it, so a tenant's empty
    bucket does not hold it up."""
    dead = _dead()
    aws_sqs = aws["sqs"]
    while aws_sqs.receive_message(QueueUrl=aws["queue_url"]).get("Messages"):
        pass
    quotas.set_limits("acme", enqueue_rate_per_second=1 / 86_400, enqueue_burst=1)
    assert _api("POST", "/v1/jobs", key, {"type": "echo"})[0] == 202
    assert _api("POST", "/v1/jobs", key, {"type": "echo"})[0] == 429

    report = dead_letters.redrive(tenant="acme")

    assert report.redriven == [dead]
    assert job_store.get(dead).status is Status.QUEUED
