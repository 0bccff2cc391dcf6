"""Cancel and retry against moto: the races with the worker's claim, and what each state answers."""

import json
import time

import pytest

from shared import settings
from shared.control import cancel, retry
from shared.errors import Conflict, NotFound
from shared.jobs import enqueue
from shared.jobs.enqueue import JobRequest
from shared.model.message import JobMessage
from shared.model.states import Status
from shared.store.jobs import job_claims, job_index, job_items, job_store
from shared.worker.delivery import Delivery
from tests.unit.worker_harness import RetryLater, work


def _enqueue(job_type="echo", payload=None, tenant="acme", **options) -> JobMessage:
    return enqueue.enqueue(tenant, JobRequest.from_fields({"type": job_type, "payload": payload, **options}))


def _deliver(message: JobMessage, message_id="m1") -> str:
    return work(message, Delivery(message_id=message_id, body=message.to_json()))


def _queued_bodies(aws) -> list[dict]:
    bodies = []
    for _ in range(20):
        got = aws["sqs"].receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            break
        bodies += [json.loads(m["Body"]) for m in got]
    return bodies


def _record(job_id):
    record = job_store.get(job_id)
    return record


# Cancel vs claim: both conditional writes on one item, exactly one wins -----------------------------


def test_claim_then_cancel_the_job_runs_and_the_cancel_is_a_409(aws):
    message = _enqueue()
    assert isinstance(job_claims.claim(message, "m1", time.time(), lease_seconds=60), job_claims.Claimed)

    with pytest.raises(Conflict, match="running"):
        cancel.cancel("acme", message.id)
    assert _record(message.id).status is Status.RUNNING


def test_cancel_then_claim_the_delivery_is_acked_unrun(aws):
    message = _enqueue(payload={"x": 1})

    cancelled = cancel.cancel("acme", message.id)

    assert cancelled.status is Status.CANCELLED
    assert cancelled.cancelled_at is not None
    assert _deliver(message) == "duplicate"
    record = _record(message.id)
    assert record.status is Status.CANCELLED
    assert record.attempts == 0
    assert record.result is None
    assert record.payload == {"x": 1}  # recorded as the message was acknowledged: retryable now


def test_failed_then_cancelled_then_redelivered_never_runs_again(aws):
    message = _enqueue("fail", {"times": 1})
    with pytest.raises(RetryLater):
        _deliver(message)
    assert _record(message.id).status is Status.FAILED

    assert cancel.cancel("acme", message.id).status is Status.CANCELLED
    assert _deliver(message) == "duplicate"

    record = _record(message.id)
    assert record.status is Status.CANCELLED
    assert record.attempts == 1


def test_a_running_job_whose_lease_expired_can_be_cancelled(aws):
    message = _enqueue()
    job_claims.claim(message, "m1", time.time() - 100, lease_seconds=10)  # its worker died long ago

    assert cancel.cancel("acme", message.id).status is Status.CANCELLED
    assert _deliver(message, "m1") == "duplicate"


def test_cancel_is_idempotent_and_a_finished_job_is_a_409(aws):
    message = _enqueue()
    first = cancel.cancel("acme", message.id).public()
    assert cancel.cancel("acme", message.id).public() == first

    done = _enqueue()
    _deliver(done)
    with pytest.raises(Conflict, match="finished"):
        cancel.cancel("acme", done.id)


def test_cancel_of_another_tenants_job_or_a_made_up_id_is_not_found(aws):
    message = _enqueue(tenant="acme")
    with pytest.raises(NotFound):
        cancel.cancel("other", message.id)
    _deliver(_enqueue(tenant="acme"))
    with pytest.raises(NotFound):
        cancel.cancel("other", "jtaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
    assert job_store.get(message.id) is None  # nothing was written for the wrong tenant


def test_a_cancelled_job_is_listed_where_it_was_enqueued(aws):
    message = _enqueue()
    cancel.cancel("acme", message.id)

    shard = job_items.index_shard(message.id)
    page = job_index.query_jobs_index(
        "acme", shard, oldest_sort_key="0", newest_sort_key="9" * 14, start_after=None, limit=10
    )
    assert [item["gsi2sk"]["S"] for item in page.items] == [job_items.index_sort_key(message.enqueued_at, message.id)]


def test_a_far_future_job_is_cancelled_its_schedule_deleted_and_retryable_at_once(scheduler_env):
    message = _enqueue(payload={"later": True}, delay_seconds=settings.MAX_SQS_DELAY_SECONDS + 3600)

    cancelled = cancel.cancel("acme", message.id)

    assert cancelled.status is Status.CANCELLED
    assert cancelled.payload == {"later": True}
    assert scheduler_env["scheduler"].list_schedules(GroupName=settings.SCHEDULE_GROUP)["Schedules"] == []
    retried = retry.retry("acme", message.id)
    assert retried.payload == {"later": True}
    assert [body["id"] for body in _queued_bodies(scheduler_env)] == [message.id]


# Retry -------------------------------------------------------------------------------------------


def test_a_dead_job_retried_runs_again_with_a_fresh_budget(aws):
    message = _enqueue("fail", {"times": 1}, max_attempts=1)
    assert _deliver(message) == "dead"
    _queued_bodies(aws)  # drain

    retried = retry.retry("acme", message.id)

    record = _record(message.id)
    assert (record.status, record.retries, record.attempts, record.error) == (Status.QUEUED, 1, 1, None)
    (body,) = _queued_bodies(aws)
    assert body["id"] == message.id
    assert body["max_attempts"] == 1  # the message carries the job's budget ...
    assert record.max_attempts == 2  # ... and the record, which the claim counts, one attempt used + 1 more
    assert _deliver(retried, "m2") == "succeeded"
    record = _record(message.id)
    assert (record.status, record.attempts, record.result) == (Status.SUCCEEDED, 2, {"succeeded_on_attempt": 2})


def test_retrying_a_retried_job_answers_it_again_and_the_claim_runs_it_once(aws):
    message = _enqueue("fail", {"times": 5}, max_attempts=1)
    _deliver(message)
    first = retry.retry("acme", message.id)
    second = retry.retry("acme", message.id)

    assert first.id == second.id == message.id
    assert isinstance(job_claims.claim(first, "m2", time.time(), lease_seconds=60), job_claims.Claimed)
    assert isinstance(job_claims.claim(second, "m3", time.time(), lease_seconds=60), job_claims.HeldElsewhere)


def test_retrying_a_job_a_retry_already_queued_sends_nothing(aws):
    message = _enqueue("fail", {"times": 5}, max_attempts=1)
    _deliver(message)
    _queued_bodies(aws)  # drain
    retry.retry("acme", message.id)
    assert [body["id"] for body in _queued_bodies(aws)] == [message.id]

    again = retry.retry("acme", message.id)

    assert again.id == message.id
    assert _queued_bodies(aws) == []
    assert _record(message.id).status is Status.QUEUED
    bulk = retry.retry_dead("acme", None, since=None, limit=10)
    assert bulk.ids == [] and _queued_bodies(aws) == []


def test_a_retry_whose_send_failed_is_sent_by_the_next_retry_and_only_then(aws, monkeypatch):
    message = _enqueue("fail", {"times": 5}, max_attempts=1)
    _deliver(message)
    _queued_bodies(aws)  # drain
    send = retry._send

    def fail(_message: JobMessage) -> None:
        raise RuntimeError("queue unavailable")

    monkeypatch.setattr(retry, "_send", fail)
    with pytest.raises(RuntimeError):
        retry.retry("acme", message.id)
    assert _record(message.id).status is Status.QUEUED
    assert _queued_bodies(aws) == []
    monkeypatch.setattr(retry, "_send", send)

    retry.retry("acme", message.id)
    assert [body["id"] for body in _queued_bodies(aws)] == [message.id]
    retry.retry("acme", message.id)
    assert _queued_bodies(aws) == []


def test_the_operators_redrive_sends_a_job_a_retry_already_queued(aws):
    message = _enqueue("fail", {"times": 5}, max_attempts=1)
    _deliver(message)
    retry.retry("acme", message.id)
    _queued_bodies(aws)  # drain: as if that message went to the DLQ

    retry.redrive("acme", message.id)

    assert [body["id"] for body in _queued_bodies(aws)] == [message.id]


def test_a_bulk_retry_marks_what_it_sent_so_a_retry_of_one_sends_nothing(aws):
    message = _enqueue("fail", {"times": 5}, max_attempts=1)
    _deliver(message)
    _queued_bodies(aws)  # drain
    assert retry.retry_dead("acme", None, since=None, limit=10).ids == [message.id]
    assert len(_queued_bodies(aws)) == 1

    retry.retry("acme", message.id)

    assert _queued_bodies(aws) == []


def test_retry_answers_conflict_for_jobs_that_are_not_dead_or_cancelled(aws):
    queued = _enqueue()
    with pytest.raises(Conflict, match="has not run yet"):
        retry.retry("acme", queued.id)
    done = _enqueue()
    _deliver(done)
    with pytest.raises(Conflict, match="succeeded"):
        retry.retry("acme", done.id)
    with pytest.raises(NotFound):
        retry.retry("other", done.id)


def test_a_job_cancelled_before_any_worker_saw_it_is_retryable_once_its_message_arrives(aws):
    message = _enqueue(payload={"n": 7})
    cancel.cancel("acme", message.id)

    with pytest.raises(Conflict, match="payload is not recorded"):
        retry.retry("acme", message.id)
    assert _deliver(message) == "duplicate"  # the worker acks it and records its content
    _queued_bodies(aws)  # drain the original message

    retry.retry("acme", message.id)
    (body,) = _queued_bodies(aws)
    assert (body["payload"], body["max_attempts"]) == ({"n": 7}, settings.DEFAULT_MAX_ATTEMPTS)
    assert _deliver(JobMessage.from_dict(body), "m9") == "succeeded"


def test_bulk_retry_takes_the_newest_dead_jobs_of_a_type_and_says_more_remain(aws):
    dead = []
    for n in range(5):
        message = _enqueue("fail", {"times": 9, "n": n}, max_attempts=1)
        _deliver(message)
        dead.append(message.id)
    survivor = _enqueue("echo")
    _deliver(survivor)
    _queued_bodies(aws)

    first = retry.retry_dead("acme", "fail", since=None, limit=3)
    second = retry.retry_dead("acme", None, since=None, limit=3)
    third = retry.retry_dead("acme", None, since=None, limit=3)

    assert first.ids == dead[::-1][:3]  # newest first
    assert first.more is True
    assert second.ids == dead[::-1][3:]
    assert second.more is False
    assert (third.ids, third.more) == ([], False)
    assert sorted(body["id"] for body in _queued_bodies(aws)) == sorted(dead)
    assert retry.retry_dead("other", None, since=None, limit=3).ids == []
