"""The completer on moto: each verdict makes exactly its store write and its queue call, in this order."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

import pytest

from shared.aws import queue
from shared.model.message import JobMessage
from shared.model.outcome import Outcome, OutcomeMessage, Started
from shared.model.states import Status
from shared.store.jobs import job_claims, job_store
from shared.worker.breaker import StoreBreaker
from shared.worker.complete.completer import Completer
from shared.worker.delivery import Delivery
from shared.worker.run.cover import HiddenBatch
from shared.worker.verdicts import (
    Attempt,
    Completed,
    Dead,
    Duplicate,
    HandBack,
    LateOutcome,
    RanUnclaimed,
    Retry,
    Unreadable,
    Verdict,
)

_SPIED = {
    job_store: ("complete", "record_failure", "record_dead", "record_carried"),
    queue: ("send_to_dlq", "retry_later", "send_outcomes"),
}


def _spy(made: list[str], name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def spy(*args: Any, **kwargs: Any) -> Any:
        made.append(name)
        return real(*args, **kwargs)

    return spy


@pytest.fixture
def calls(aws, monkeypatch) -> list[str]:
    """The completer's store and queue calls, as "module.function", in order."""
    made: list[str] = []
    for module, names in _SPIED.items():
        for name in names:
            monkeypatch.setattr(
                module, name, _spy(made, f"{module.__name__.rpartition('.')[2]}.{name}", getattr(module, name))
            )
    return made


class _InLine(Executor):
    """Runs each write at once, so that the test sees it in order."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:
            future.set_exception(error)
        return future


def _completer(breaker: StoreBreaker | None = None) -> Completer:
    return Completer(breaker or StoreBreaker(), _InLine(), HiddenBatch([]))


def _message() -> JobMessage:
    return JobMessage(id="jt-done-1", tenant="acme", type="echo", payload=1, max_attempts=3, enqueued_at=time.time())


def _received(aws: dict[str, Any], message: JobMessage) -> Delivery:
    """The message sent and received, so that it can be handed back."""
    aws["sqs"].send_message(QueueUrl=aws["queue_url"], MessageBody=message.to_json())
    (got,) = aws["sqs"].receive_message(QueueUrl=aws["queue_url"])["Messages"]
    return Delivery(message_id=got["MessageId"], body=got["Body"], receipt_handle=got["ReceiptHandle"])


def _claimed(message: JobMessage) -> Attempt:
    claim = job_claims.claim(message, "m1", time.time(), lease_seconds=10)
    return Attempt(message, claim.token, Started(time.time(), first_attempt=True), time.time() + 10)


def _unclaimed_run(message: JobMessage) -> RanUnclaimed:
    return RanUnclaimed(OutcomeMessage(message, Status.SUCCEEDED, time.time(), time.time(), result=1), 0)


# name: (the verdict for a message, what the delivery answers, the calls, the record's status after)
CASES: dict[str, tuple[Callable[[JobMessage], Verdict], Outcome | HandBack, list[str], Status | None]] = {
    "completed": (
        lambda m: Completed(_claimed(m), "done", time.time()),
        Outcome.SUCCEEDED,
        ["job_store.complete"],
        Status.SUCCEEDED,
    ),
    "retry": (
        lambda m: Retry(_claimed(m), 5, "boom"),
        HandBack(5, "boom"),
        ["job_store.record_failure", "queue.retry_later"],
        Status.FAILED,
    ),
    "dead, ended by its attempt": (
        lambda m: Dead("boom", m, _claimed(m)),
        Outcome.DEAD,
        ["queue.send_to_dlq", "job_store.record_dead"],
        Status.DEAD,
    ),
    "dead, its attempts used up": (
        lambda m: _claimed(m) and Dead("gave up", m),
        Outcome.DEAD,
        ["queue.send_to_dlq", "job_store.record_dead"],
        Status.DEAD,
    ),
    "unreadable, its id verified": (
        lambda m: Unreadable("bad field", m.to_dict()),
        Outcome.UNREADABLE,
        ["job_store.record_dead", "queue.send_to_dlq"],
        Status.DEAD,
    ),
    "unreadable, nothing to trust": (lambda m: Unreadable("not JSON"), Outcome.UNREADABLE, ["queue.send_to_dlq"], None),
    "handed back": (lambda m: HandBack(7, "later"), HandBack(7, "later"), ["queue.retry_later"], None),
    "duplicate": (lambda m: Duplicate(), Outcome.DUPLICATE, [], None),
    "ran unclaimed, the store back": (
        _unclaimed_run,
        Outcome.SUCCEEDED,
        ["job_store.record_carried"],
        Status.SUCCEEDED,
    ),
    "an outcome recorded late": (
        lambda m: LateOutcome(_unclaimed_run(m).outcome),
        Outcome.RECORDED_LATE,
        ["job_store.record_carried"],
        Status.SUCCEEDED,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_each_verdict_makes_its_own_writes_and_no_other(aws, calls, case):
    verdict_for, answer, expected, status = CASES[case]
    message = _message()
    delivery = _received(aws, message)
    verdict = verdict_for(message)
    calls.clear()
    completer = _completer()

    assert completer.settle(verdict, delivery) == answer
    assert completer.finish() == []

    assert calls == expected
    found = job_store.get(message.id)
    assert (found.status if found else None) is status


def test_an_unclaimed_runs_outcome_goes_by_message_at_the_batchs_end_while_the_store_cools(aws, calls):
    message = _message()
    delivery = _received(aws, message)
    breaker = StoreBreaker()
    breaker.failed()
    completer = _completer(breaker)

    assert completer.settle(_unclaimed_run(message), delivery) is Outcome.SUCCEEDED
    assert calls == []  # nothing sent before the batch ends
    assert completer.finish() == []

    assert calls == ["queue.send_outcomes"]
    assert job_store.get(message.id) is None
