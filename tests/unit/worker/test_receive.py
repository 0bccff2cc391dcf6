"""The worker's domain against moto: claims, duplicates, leases, retries, dead jobs."""

import json
import time

import pytest
from botocore.exceptions import ClientError

from shared.model.message import JobMessage
from shared.model.states import Status
from shared.store.jobs import job_claims, job_items, job_store
from shared.worker.delivery import Delivery
from tests.unit.worker_harness import RetryLater, work


def _message(job_type="echo", payload=None, max_attempts=3, job_id="jt-unit-1"):
    return JobMessage(
        id=job_id, tenant="acme", type=job_type, payload=payload, max_attempts=max_attempts, enqueued_at=time.time()
    )


def _deliver(message, message_id="m1"):
    return work(message, Delivery(message_id=message_id, body=message.to_json()))


def _record(job_id):
    record = job_store.get(job_id)
    return record


def test_a_job_runs_and_records_its_result(aws):
    assert _deliver(_message(payload={"a": 1})) == "succeeded"

    record = _record("jt-unit-1")
    assert record.status is Status.SUCCEEDED
    assert record.result == {"a": 1}
    assert record.attempts == 1


def test_a_second_delivery_of_a_finished_job_does_not_run_it_again(aws):
    message = _message()
    _deliver(message, "m1")

    assert _deliver(message, "m2") == "duplicate"
    assert _record(message.id).attempts == 1


def test_a_delivery_while_another_message_holds_the_job_is_acked(aws):
    message = _message()
    job_claims.claim(message, "holder", time.time(), lease_seconds=60)

    assert _deliver(message, "other") == "duplicate"


def test_a_redelivery_of_the_holding_message_waits_for_the_lease(aws):
    message = _message()
    job_claims.claim(message, "m1", time.time(), lease_seconds=60)

    with pytest.raises(RetryLater) as later:
        _deliver(message, "m1")
    assert 55 < later.value.seconds <= 61


def test_an_expired_lease_is_taken_over_and_the_old_attempt_cannot_complete(aws):
    message = _message()
    stale = job_claims.claim(message, "m1", time.time() - 100, lease_seconds=10)

    assert _deliver(message, "m1") == "succeeded"
    assert job_store.complete(message.id, stale.token, "late", time.time()) is False
    assert _record(message.id).attempts == 2


def test_a_failure_with_attempts_left_is_recorded_failed_and_retried_later(aws):
    with pytest.raises(RetryLater) as later:
        _deliver(_message("fail", {"times": 1}))

    assert 1 <= later.value.seconds <= 3
    assert _record("jt-unit-1").status is Status.FAILED


def test_the_last_failure_is_dead_and_in_the_dlq(aws):
    message = _message("fail", {"times": 5}, max_attempts=1)

    assert _deliver(message) == "dead"

    assert _record(message.id).status is Status.DEAD
    dead = aws["sqs"].receive_message(QueueUrl=aws["dlq_url"], MessageAttributeNames=["All"])["Messages"]
    assert json.loads(dead[0]["Body"])["id"] == message.id


def test_attempts_that_died_without_an_outcome_end_dead(aws):
    message = _message(max_attempts=2)
    for started_ago in (200, 100):  # two attempts whose workers died: claimed, leases long expired
        assert isinstance(
            job_claims.claim(message, "m1", time.time() - started_ago, lease_seconds=10), job_claims.Claimed
        )

    assert _deliver(message, "m1") == "dead"
    assert _record(message.id).status is Status.DEAD


class _NoOldItemOnConditionFailure:
    """A store that returns no item with a failed condition (DAX), so the claim re-reads the record."""

    def __init__(self, inner):
        self._inner = inner

    def update_item(self, **request):
        try:
            return self._inner.update_item(**request)
        except ClientError as error:
            error.response.pop("Item", None)
            raise

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_a_failed_job_with_attempts_left_is_retried_not_buried_when_a_second_message_races_it(aws, monkeypatch):
    # Two messages of one job (an idempotency-key retry): m2's claim fails on m1's lease, and by the
    # time m2 re-reads the record m1 has recorded `failed` (attempt 1 of 3). m2 must come back, not bury it.
    message = _message("fail", {"times": 1})
    first = job_claims.claim(message, "m1", time.time(), lease_seconds=60)
    client = job_items.jobs_client()
    monkeypatch.setattr(job_items, "jobs_client", lambda single_attempt=False: _NoOldItemOnConditionFailure(client))
    read_item = job_items.read_item

    def m1_fails_first(job_id):
        job_store.record_failure(message.id, first.token, "failing on purpose", time.time())
        return read_item(job_id)

    monkeypatch.setattr(job_items, "read_item", m1_fails_first)

    with pytest.raises(RetryLater) as later:
        _deliver(message, "m2")

    assert "changed it while this one claimed it" in str(later.value)
    job = _record(message.id)
    assert (job.status, job.attempts) == (Status.FAILED, 1)


def test_only_a_running_job_whose_lease_expired_with_its_attempts_used_up_is_exhausted(aws):
    message = _message(max_attempts=2)
    now = time.time()
    base = {"pk": {"S": f"job#{message.id}"}, "tenant": {"S": "acme"}, "max_attempts": {"N": "2"}}

    def why(status: str, attempts: int, lease_until: float) -> object:
        old = base | {"status": {"S": status}, "attempts": {"N": str(attempts)}, "lease_until": {"N": str(lease_until)}}
        return job_claims._why_not_claimed(old, message, "m9", now)

    assert isinstance(why("running", 2, now - 1), job_claims.Exhausted)
    assert isinstance(why("running", 1, now - 1), job_claims.Contended)  # the condition raced a takeover
    assert isinstance(why("failed", 1, now - 1), job_claims.Contended)
    assert isinstance(why("running", 2, now + 30), job_claims.HeldElsewhere)
    assert isinstance(why("succeeded", 2, now - 1), job_claims.Finished)


def test_the_records_own_max_attempts_counts_when_a_later_message_asks_for_fewer(aws):
    first = _message("fail", {"times": 1}, max_attempts=3)
    with pytest.raises(RetryLater):
        _deliver(first, "m1")  # attempt 1 of 3 failed

    fewer = _message("fail", {"times": 2}, max_attempts=1)

    with pytest.raises(RetryLater):
        _deliver(fewer, "m2")  # attempt 2 of the record's 3 fails: retried, not dead
    assert _deliver(fewer, "m3") == "succeeded"  # attempt 3
    assert _record(first.id).attempts == 3


def test_a_queued_record_written_without_a_claim_is_claimed_and_run(aws):
    message = _message(payload="again")
    aws["dynamodb"].put_item(
        TableName="corral-jobs",
        Item={
            "pk": {"S": f"job#{message.id}"},
            "status": {"S": "queued"},
            "tenant": {"S": "acme"},
            "max_attempts": {"N": "3"},
        },
    )

    assert _deliver(message) == "succeeded"
    assert (_record(message.id).attempts, _record(message.id).result) == (1, "again")
