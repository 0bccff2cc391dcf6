"""The worker when the store fails (after botocore's retries): the message comes back soon, nothing is lost."""

import time

import pytest
from botocore.exceptions import ClientError

from shared import store
from shared.model import JobMessage, Status
from shared.work import Delivery, RetryLater, work


def _message() -> JobMessage:
    return JobMessage(id="jt-blip-1", tenant="acme", type="echo", payload=1, max_attempts=3, enqueued_at=time.time())


def _deliver(message: JobMessage) -> str:
    return work(message, Delivery(message_id="m1", body=message.to_json()))


def _throttled(*args, **kwargs):
    raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "blip"}}, "UpdateItem")


def test_a_store_failure_before_the_claim_retries_within_seconds(aws, monkeypatch):
    monkeypatch.setenv("CORRAL_TABLE", "no-such-table")  # moto answers ResourceNotFoundException

    with pytest.raises(RetryLater) as later:
        _deliver(_message())

    assert later.value.seconds <= 3


def test_an_outcome_the_store_would_not_take_is_retried_when_the_holders_lease_ends(aws, monkeypatch):
    message = _message()
    with monkeypatch.context() as blip:
        blip.setattr(store, "complete", _throttled)
        with pytest.raises(RetryLater) as later:
            _deliver(message)
    assert 9 <= later.value.seconds <= 11  # CORRAL_LEASE_SECONDS=10: the holder's lease must run out first
    assert store.get(message.id)[0].status is Status.RUNNING


def test_an_outcome_write_whose_answer_was_lost_can_be_applied_again_by_the_same_attempt(aws):
    # botocore retries a write that timed out; if DynamoDB had applied it, the retry must still
    # succeed (and so pass through the status cache) rather than fail its condition.
    message = _message()
    claim = store.claim(message, "m1", time.time(), lease_seconds=10)

    assert store.complete(message.id, claim.token, "result", time.time()) is True
    assert store.complete(message.id, claim.token, "result", time.time()) is True
    assert store.fail(message.id, claim.token, "late failure", time.time(), dead=False) is False
    assert store.get(message.id)[0].status is Status.SUCCEEDED


def test_after_a_store_failure_the_worker_hands_deliveries_back_without_calling_the_store(aws, monkeypatch):
    calls = []

    def failing_claim(*args, **kwargs):
        calls.append(args)
        _throttled()

    monkeypatch.setattr(store, "claim", failing_claim)
    for _ in range(5):
        with pytest.raises(RetryLater) as later:
            _deliver(_message())
        assert later.value.seconds <= 3

    assert len(calls) == 1  # the other four came back without touching the store
