"""The worker when the store fails (after botocore's retries).

A job's first delivery runs without a claim and its outcome travels in an outcome message that a
later delivery records once; a redelivery, or a job of an exclusive type, is handed back and comes
back soon. Nothing is lost, and no job gets two outcomes.
"""

import dataclasses
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.worker.handler import handler, worker
from shared import environment
from shared.aws import queue
from shared.aws.clients import client as aws_client
from shared.control import retry
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.message import JobMessage
from shared.model.outcome import Outcome, OutcomeMessage
from shared.model.states import Status
from shared.store.jobs import job_claims, job_store
from shared.targets.http import needs_exclusive_claim
from shared.worker import breaker
from shared.worker import receive as worker_receive
from shared.worker.complete import completer
from shared.worker.delivery import Delivery
from shared.worker.run import executor
from shared.worker.verdicts import Duplicate
from tests.unit import worker_harness as work
from tests.unit.worker_harness import RetryLater, WorkerContext, dead_letters, event_record, poll, record, send


def _message() -> JobMessage:
    return JobMessage(id="jt-blip-1", tenant="acme", type="echo", payload=1, max_attempts=3, enqueued_at=time.time())


def _deliver(message: JobMessage, receive_count: int = 1) -> Outcome:
    return work.work(message, Delivery(message_id="m1", body=message.to_json(), receive_count=receive_count))


def _throttled(*args, **kwargs):
    raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "blip"}}, "UpdateItem")


class Blip:
    """The store failing every claim and every carried outcome while `down`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.down = True
        claim, carried = job_claims.claim, job_store.record_carried

        def claim_unless_down(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                _throttled()
            return claim(*args, **kwargs)

        def carried_unless_down(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                _throttled()
            return carried(*args, **kwargs)

        monkeypatch.setattr(job_claims, "claim", claim_unless_down)
        monkeypatch.setattr(job_store, "record_carried", carried_unless_down)

    def end(self) -> None:
        self.down = False
        worker.breaker.down_until = 0.0  # the in-process cooldown is real time; the test moves past it


@pytest.fixture
def blip(aws, monkeypatch) -> Iterator[Blip]:
    monkeypatch.setattr(executor, "retry_delay", lambda *args: 0)  # a failed attempt's retry due at once
    monkeypatch.setattr(completer, "OUTCOME_DELAY_SECONDS", 0)  # outcome messages visible at once
    yield Blip(monkeypatch)


def _job(type_: str = "echo", payload: Any = "hello", **fields: Any) -> JobMessage:
    return build_message("acme", JobRequest.from_fields({"type": type_, "payload": payload, **fields}), time.time())


def _queued(aws) -> list[dict[str, Any]]:
    messages = aws["sqs"].receive_message(
        QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, AttributeNames=["All"], VisibilityTimeout=0
    )
    return messages.get("Messages", [])


# Handed back: nothing ran -------------------------------------------------------------------------


def test_a_redelivery_during_an_outage_is_handed_back_within_seconds(aws, monkeypatch):
    # A message received before may be one whose unclaimed run died after running: it waits for the claim.
    environment.change(table="no-such-table")  # moto answers ResourceNotFoundException

    with pytest.raises(RetryLater) as later:
        _deliver(_message(), receive_count=2)

    assert later.value.seconds <= 3


def test_an_outcome_neither_the_store_nor_the_queue_would_take_is_retried_when_the_holders_lease_ends(aws, monkeypatch):
    message = _message()
    with monkeypatch.context() as blip:
        blip.setattr(job_store, "complete", _throttled)
        blip.setattr(queue, "send_outcomes", _throttled)
        with pytest.raises(RetryLater) as later:
            _deliver(message)
    assert 9 <= later.value.seconds <= 11  # lease_seconds=10: the holder's lease must run out first
    assert job_store.get(message.id).status is Status.RUNNING


def test_a_claimed_attempt_whose_outcome_write_fails_carries_it_instead_of_running_again(blip, aws, monkeypatch):
    blip.end()
    job = _job(payload="claimed")
    send(aws, job.to_json())
    complete = job_store.complete
    with monkeypatch.context() as patch:
        patch.setattr(job_store, "complete", _throttled)
        assert poll(aws).failed == []  # acknowledged: the outcome is on its way
    monkeypatch.setattr(job_store, "complete", complete)
    running = record(job.id)
    assert running.status is Status.RUNNING
    worker.breaker.down_until = 0.0

    assert poll(aws).failed == []

    done = record(job.id)
    assert done.status is Status.SUCCEEDED and done.result == "claimed" and done.attempts == 1
    # when the attempt's code started: its claim's time or a moment later, never its record's time
    assert running.started_at <= done.started_at <= done.finished_at


def test_an_outcome_write_whose_answer_was_lost_can_be_applied_again_by_the_same_attempt(aws):
    # botocore retries a write that timed out; if DynamoDB had applied it, the retry must still
    # succeed (and so pass through the status cache) rather than fail its condition.
    message = _message()
    claim = job_claims.claim(message, "m1", time.time(), lease_seconds=10)

    assert job_store.complete(message.id, claim.token, "result", time.time()) is True
    assert job_store.complete(message.id, claim.token, "result", time.time()) is True
    assert job_store.record_failure(message.id, claim.token, "late failure", time.time()) is False
    assert job_store.get(message.id).status is Status.SUCCEEDED


def test_after_a_store_failure_the_worker_hands_redeliveries_back_without_calling_the_store(aws, monkeypatch):
    calls = []

    def failing_claim(*args, **kwargs):
        calls.append(args)
        _throttled()

    monkeypatch.setattr(job_claims, "claim", failing_claim)
    for _ in range(5):
        with pytest.raises(RetryLater) as later:
            _deliver(_message(), receive_count=2)
        assert later.value.seconds <= 3

    assert len(calls) == 1  # the other four came back without touching the store


def test_an_exclusive_type_waits_for_the_store_even_on_its_first_delivery(aws, monkeypatch):
    echo = job_types.lookup("echo")
    monkeypatch.setitem(job_types._REGISTRY, "echo", dataclasses.replace(echo, exclusive=True))
    monkeypatch.setattr(job_claims, "claim", _throttled)
    ran = []
    monkeypatch.setattr(queue, "send_outcomes", lambda *args: ran.append(args))

    with pytest.raises(RetryLater):
        _deliver(_message())

    assert ran == []


@pytest.mark.parametrize(
    ("payload", "exclusive"),
    [
        ({"url": "https://example.com/hook"}, True),  # POST by default
        ({"url": "https://example.com/hook", "method": "patch"}, True),
        ({"url": "https://example.com/hook", "headers": {"idempotency-key": "k1"}}, False),
        ({"url": "https://example.com/hook", "method": "GET"}, False),
        ({"url": "https://example.com/hook", "method": "PUT"}, False),
        ({"url": "https://example.com/hook", "method": "DELETE"}, False),
        ("not an object", True),
    ],
)
def test_an_http_job_is_exclusive_when_its_request_is_not_idempotent(payload, exclusive):
    assert needs_exclusive_claim(payload) is exclusive
    assert job_types.lookup("http").is_exclusive(payload) is exclusive


def test_a_type_whose_exclusivity_check_raises_is_exclusive():
    found = dataclasses.replace(job_types.lookup("echo"), exclusive=lambda payload: payload["missing"])
    assert found.is_exclusive({}) is True
    assert job_types.lookup("echo").is_exclusive({}) is False  # the default: at least once, like any job


# Run without a claim: the outcome travels ------------------------------------------------------------


def test_a_first_delivery_during_a_blip_runs_at_once_and_its_outcome_is_recorded_once_later(blip, aws):
    job = _job(payload="blip")
    send(aws, job.to_json())
    before = time.time()

    batch = poll(aws)  # the store is down: the job runs, its outcome goes on the queue, the original is acked

    assert batch is not None and batch.failed == []
    assert record(job.id) is None
    (carried,) = _queued(aws)
    outcome = json.loads(carried["Body"])
    assert outcome["kind"] == "outcome" and outcome["status"] == "succeeded" and outcome["result"] == "blip"
    assert before <= outcome["started_at"] <= outcome["finished_at"] <= time.time()

    blip.end()
    assert poll(aws).failed == []

    done = record(job.id)
    assert done.status is Status.SUCCEEDED and done.result == "blip" and done.attempts == 1
    assert done.started_at == outcome["started_at"]  # the run's own start: enqueue-to-run is measured from it
    assert done.payload == "blip" and done.enqueued_at == job.enqueued_at
    assert poll(aws) is None  # nothing left


def test_a_job_run_in_a_blip_counts_one_success_when_it_ends_and_none_when_it_is_recorded(blip, aws, capsys):
    send(aws, _job().to_json())
    poll(aws)
    blip.end()
    poll(aws)

    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert sum(sum(metrics.get("JobsSucceeded", [])) for metrics in emitted) == 1
    assert sum(sum(metrics.get("OutcomesRecordedLate", [])) for metrics in emitted) == 1


def test_outcome_messages_travel_in_a_group_of_their_own_so_new_jobs_go_first(blip, aws):
    job = _job()
    send(aws, job.to_json())
    poll(aws)

    got = aws["sqs"].receive_message(
        QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, MessageSystemAttributeNames=["MessageGroupId"]
    )["Messages"]
    assert [(json.loads(m["Body"])["kind"], m["Attributes"]["MessageGroupId"]) for m in got] == [
        ("outcome", "acme#outcomes")
    ]


def test_a_blips_outcome_messages_arrive_after_a_delay_and_are_handled_beside_new_jobs(blip, aws, monkeypatch):
    monkeypatch.setattr(completer, "OUTCOME_DELAY_SECONDS", 2)
    job = _job(payload="first")
    send(aws, job.to_json())
    poll(aws)  # runs unclaimed; its outcome message is sent with the delay
    assert _queued(aws) == []  # not deliverable yet: received now, it could only be handed back
    blip.end()
    new_job = _job(payload="second")
    deadline = time.monotonic() + 10
    while len(_queued(aws)) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    send(aws, new_job.to_json())

    order = []
    work_job = worker_receive.work
    monkeypatch.setattr(worker_receive, "_late_outcome", lambda *_: order.append("outcome") or Duplicate())
    monkeypatch.setattr(
        worker_receive,
        "work",
        lambda message, delivery, batch, **_: order.append("job") or work_job(message, delivery, batch),
    )
    got = aws["sqs"].receive_message(
        QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"]
    )["Messages"]
    assert len(got) == 2
    handler({"Records": [event_record(m) for m in got]}, WorkerContext())
    assert sorted(order) == ["job", "outcome"]


def test_a_batchs_outcome_messages_go_to_the_queue_in_one_call_when_the_batch_ends(blip, aws, monkeypatch):
    # Ten SendMessage calls held a herd batch's environment for 225-360 ms; one SendMessageBatch does not.
    calls: list[str] = []
    queue_client = aws_client("sqs")
    queue_client.meta.events.register("before-call.sqs.*", lambda model, **_: calls.append(model.name))
    jobs = [_job(payload=n) for n in range(5)]
    for job in jobs:
        send(aws, job.to_json())

    assert poll(aws).failed == []

    assert calls == ["ChangeMessageVisibilityBatch", "SendMessageBatch"]  # the batch's hiding, then its outcomes
    blip.end()
    while poll(aws) is not None:
        pass
    assert [record(job.id).result for job in jobs] == list(range(5))


def test_an_outcome_message_the_queue_rejects_hands_back_only_its_own_job(blip, aws, monkeypatch):
    send_outcomes = queue.send_outcomes

    def rejected(entry: Any) -> bool:
        outcome, _delay = entry
        return outcome.job.payload == 1

    def second_rejected(outcomes: list[Any]) -> list[str | None]:
        answers = iter(send_outcomes([entry for entry in outcomes if not rejected(entry)]))
        return ["InternalError: rejected" if rejected(entry) else next(answers) for entry in outcomes]

    monkeypatch.setattr(queue, "send_outcomes", second_rejected)
    message_ids = [send(aws, _job(payload=n).to_json()) for n in range(3)]

    batch = poll(aws)

    assert batch is not None and batch.failed == [message_ids[1]]  # the job itself comes back, to run under a claim
    outcomes = [json.loads(message["Body"]) for message in _queued(aws)]
    assert sorted(outcome["result"] for outcome in outcomes) == [0, 2]


def test_an_unclaimed_run_that_ends_after_the_store_is_back_records_at_once(blip, aws, monkeypatch):
    # A job that started unclaimed in a blip's last moments: no outcome message to receive and record later.
    job = _job("sleep", {"seconds": breaker.STORE_COOLDOWN_SECONDS + 0.2})
    send(aws, job.to_json())

    def blip_ends_meanwhile(*args: Any, **kwargs: Any) -> Any:
        blip.down = False  # the store answers again, and the cooldown passes while the job runs
        _throttled()

    monkeypatch.setattr(job_claims, "claim", blip_ends_meanwhile)
    assert poll(aws).failed == []

    assert _queued(aws) == []  # no outcome message
    done = record(job.id)
    assert done.status is Status.SUCCEEDED and done.attempts == 1


def test_a_retried_jobs_run_in_a_blip_is_recorded_not_dropped_as_an_outcome_the_store_had(blip, aws, monkeypatch):
    # A retry (or a redrive) queues the job's record again and sends a new message: a first delivery, which
    # runs unclaimed in a blip. Its outcome was refused by the record's `queued` status and the message
    # acknowledged: the job stayed queued with no message (found by tests/unit/test_invariant.py).
    failing = {"now": True}

    def fails_while_told(payload: Any, context: Any) -> str:
        if failing["now"]:
            raise RuntimeError("not yet")
        return "done"

    monkeypatch.setitem(
        job_types._REGISTRY, "flaky", job_types.JobType(name="flaky", run=fails_while_told, timeout_seconds=5)
    )
    blip.end()
    job = _job("flaky", max_attempts=1)
    send(aws, job.to_json())
    poll(aws)
    assert record(job.id).status is Status.DEAD
    failing["now"] = False
    retry.retry("acme", job.id)
    assert record(job.id).status is Status.QUEUED

    blip.down = True
    assert poll(aws).failed == []  # the store is down: the retry runs unclaimed, its outcome goes on the queue
    blip.end()
    assert poll(aws).failed == []

    done = record(job.id)
    assert done.status is Status.SUCCEEDED and done.result == "done" and done.retries == 1
    assert poll(aws) is None  # nothing left


def test_a_carried_outcome_delivered_while_the_store_is_still_down_waits_and_is_recorded_later(blip, aws):
    job = _job()
    send(aws, job.to_json())
    poll(aws)

    worker.breaker.down_until = 0.0  # the cooldown passed, the store still fails
    assert len(poll(aws).failed) == 1  # handed back, not lost
    blip.end()
    for _ in range(20):  # the hand-back's delay: a second or two
        if poll(aws) is not None:
            break
        time.sleep(0.25)
    assert record(job.id).status is Status.SUCCEEDED


def test_a_carried_outcome_delivered_twice_is_recorded_once(blip, aws):
    job = _job()
    send(aws, job.to_json())
    poll(aws)
    (carried,) = _queued(aws)
    outcome = OutcomeMessage.from_data(json.loads(carried["Body"]), secret=_secret())
    blip.end()

    assert job_store.record_carried(outcome, carried["MessageId"]) is True
    first = record(job.id)
    # The same message again (a write whose answer was lost, retried) applies the same outcome ...
    assert job_store.record_carried(outcome, carried["MessageId"]) is True
    # ... and another delivery of it (SQS at least once: another message id) records nothing.
    assert work.receive(Delivery(message_id="another", body=carried["Body"], receive_count=1)) is Outcome.DUPLICATE
    assert record(job.id) == first


def _carried_outcome_and_a_claim_after_the_blip(blip: Blip, aws: dict[str, Any]) -> tuple[JobMessage, Any, Any]:
    """A job that ran unclaimed in a blip (its outcome message waiting on the queue), then, once the
    store is back, claimed by a duplicate delivery: (job, the outcome message, the claim)."""
    job = _job(payload="first")
    send(aws, job.to_json())
    poll(aws)
    (carried,) = _queued(aws)
    blip.end()
    return job, carried, job_claims.claim(job, "duplicate-delivery", time.time(), lease_seconds=10)


def test_a_claimed_attempt_that_recorded_first_wins_over_a_late_carried_outcome(blip, aws):
    job, carried, claimed = _carried_outcome_and_a_claim_after_the_blip(blip, aws)
    assert job_store.complete(job.id, claimed.token, "claimed result", time.time())

    assert work.receive(Delivery(message_id=carried["MessageId"], body=carried["Body"])) is Outcome.DUPLICATE
    assert record(job.id).result == "claimed result" and record(job.id).attempts == 1


def test_a_carried_outcome_recorded_first_makes_a_claimed_attempt_running_meanwhile_lose_its_claim(blip, aws):
    job, carried, claimed = _carried_outcome_and_a_claim_after_the_blip(blip, aws)

    assert work.receive(Delivery(message_id=carried["MessageId"], body=carried["Body"])) is Outcome.RECORDED_LATE
    assert job_store.complete(job.id, claimed.token, "second result", time.time()) is False
    assert record(job.id).result == "first"


def test_a_failed_unclaimed_attempt_is_recorded_and_its_retry_runs_under_a_claim(blip, aws):
    job = _job("fail", {"times": 1})
    send(aws, job.to_json())

    poll(aws)
    (carried,) = _queued(aws)
    assert json.loads(carried["Body"])["status"] == "failed"
    blip.end()
    poll(aws)

    done = record(job.id)
    assert done.status is Status.SUCCEEDED and done.attempts == 2
    assert done.result == {"succeeded_on_attempt": 2}


def test_a_last_attempt_that_fails_unclaimed_goes_to_the_dlq_and_is_recorded_dead(blip, aws):
    job = _job("fail", {"times": 5}, max_attempts=1)
    send(aws, job.to_json())

    poll(aws)
    blip.end()
    poll(aws)

    assert record(job.id).status is Status.DEAD
    ((body, reason),) = dead_letters(aws)
    assert json.loads(body)["id"] == job.id and "failing on purpose" in reason


def test_an_outcome_that_cannot_be_sent_hands_the_original_back_to_run_under_a_claim(blip, aws, monkeypatch):
    def queue_down(*args: Any) -> None:
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "sqs blip"}}, "SendMessage")

    monkeypatch.setattr(queue, "send_outcomes", queue_down)
    with pytest.raises(RetryLater):
        _deliver(_job())


def test_an_outcome_message_with_an_unknown_field_is_buried_and_touches_no_record(blip, aws):
    job = _job()
    outcome = OutcomeMessage(job, Status.SUCCEEDED, time.time(), time.time(), result=1)
    forged = json.loads(outcome.to_json()) | {"attempts": 9}
    blip.end()

    assert work.receive(Delivery(message_id="m1", body=json.dumps(forged))) is Outcome.UNREADABLE

    assert record(job.id) is None
    ((_, reason),) = dead_letters(aws)
    assert "unknown field 'attempts'" in reason


def test_an_outcome_message_whose_job_id_does_not_verify_is_buried(blip, aws):
    outcome = OutcomeMessage(dataclasses.replace(_job(), tenant="other"), Status.SUCCEEDED, 1.0, 2.0, result=1)
    blip.end()

    assert work.receive(Delivery(message_id="m1", body=outcome.to_json())) is Outcome.UNREADABLE


def _secret() -> bytes:
    from shared.store.id_secret import id_secret

    return id_secret()


# Interleavings: never two outcomes, never a lost job --------------------------------------------------

_EVENTS = st.lists(
    st.sampled_from(["poll", "end-blip", "duplicate", "lose-cooldown"]),
    min_size=1,
    max_size=12,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=_EVENTS, kind=st.sampled_from(["echo", "fail"]))
def test_any_interleaving_of_blip_duplicates_and_carried_outcomes_ends_with_one_outcome(aws, monkeypatch, events, kind):
    """A job enqueued during a blip, SQS delivering a duplicate of it at any point, polls and the
    blip's end in any order: the job ends with one outcome, and no write records a second."""
    with monkeypatch.context() as patch:
        environment.change(hand_back_unit_seconds=0)  # hand-backs visible again at once
        patch.setattr(executor, "retry_delay", lambda *args: 0)
        patch.setattr(completer, "OUTCOME_DELAY_SECONDS", 0)
        patch.setattr(worker.breaker, "down_until", 0.0)
        blip = Blip(patch)
        finished_writes = []
        for name in ("complete", "record_carried"):
            original = getattr(job_store, name)

            def counted(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> bool:
                before = record(args[0].job.id if isinstance(args[0], OutcomeMessage) else args[0])
                written = _original(*args, **kwargs)
                after = record(args[0].job.id if isinstance(args[0], OutcomeMessage) else args[0])
                if written and after.status.finished and after != before:
                    finished_writes.append(_name)
                return written

            patch.setattr(job_store, name, counted)
        job = _job(kind, {"times": 1}) if kind == "fail" else _job(payload="x")
        send(aws, job.to_json())
        for event in events:
            match event:
                case "poll":
                    poll(aws)
                case "end-blip":
                    blip.end()
                case "duplicate":
                    send(aws, job.to_json())
                case "lose-cooldown":
                    worker.breaker.down_until = 0.0
        blip.end()
        for _ in range(60):  # drain: hand-backs come back within a few seconds
            if poll(aws) is None and not _in_flight(aws):
                break
            worker.breaker.down_until = 0.0
            time.sleep(0.1)
        done = record(job.id)
        assert done is not None and done.status is Status.SUCCEEDED
        assert len(finished_writes) == 1, finished_writes
        assert poll(aws) is None and not _in_flight(aws), "a message still cycling"


def _in_flight(aws) -> int:
    attributes = aws["sqs"].get_queue_attributes(
        QueueUrl=aws["queue_url"],
        AttributeNames=["ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessagesNotVisible"]) + int(
        attributes["ApproximateNumberOfMessagesDelayed"]
    )


def test_the_workers_store_calls_make_one_attempt_each(aws, monkeypatch):
    # Each has a cheaper fallback than botocore's backoff (run unclaimed, carry the outcome, hand back):
    # a retried call would hold the rest of its batch for seconds while the store fails.
    asked = []

    def spy(function: Any) -> Any:
        def called(*args: Any, single_attempt: bool = False, **kwargs: Any) -> Any:
            asked.append((function.__name__, single_attempt))
            return function(*args, single_attempt=single_attempt, **kwargs)

        return called

    for module, name in ((job_claims, "claim"), (job_store, "complete"), (job_store, "record_carried")):
        monkeypatch.setattr(module, name, spy(getattr(module, name)))
    _deliver(_job())
    job = _job()
    work.work(job, Delivery(message_id="m2", body=job.to_json(), receive_count=2))
    monkeypatch.setitem(job_types._REGISTRY, "echo", dataclasses.replace(job_types.lookup("echo"), exclusive=True))
    _deliver(_job())

    assert asked == [("claim", True), ("complete", True)] * 3  # a first delivery; a redelivery; an exclusive type


def test_a_schedules_firing_during_a_blip_runs_and_is_recorded_under_its_derived_id(blip, aws):
    from shared import ids
    from shared.store.id_secret import id_secret

    firing = {"v": 1, "tenant": "acme", "type": "echo", "payload": 3, "max_attempts": 2, "schedule": "nightly"}
    firing["scheduled_for"] = "2026-12-01T00:00:00Z"
    send(aws, json.dumps(firing))

    assert poll(aws).failed == []
    blip.end()
    assert poll(aws).failed == []

    job = record(ids.scheduled_id(id_secret(), "acme", "nightly", "2026-12-01T00:00:00Z"))
    assert (job.status, job.result, job.schedule, job.scheduled_for) == (
        Status.SUCCEEDED,
        3,
        "nightly",
        "2026-12-01T00:00:00Z",
    )


@pytest.mark.parametrize(
    "change",
    [
        {"status": "running"},
        {"v": 2},
        {"started_at": "soon"},
        {"attempt_token": 7},
        {"error": "both a result and an error"},
        {"job": {"tenant": "acme", "type": "echo"}},
    ],
)
def test_an_outcome_message_is_parsed_strictly(aws, change):
    from shared.model.message import UnreadableMessage

    outcome = OutcomeMessage(_job(), Status.SUCCEEDED, time.time(), time.time(), result=1, attempt_token="t1")
    data = json.loads(outcome.to_json())
    assert OutcomeMessage.from_data(data, secret=_secret()) == outcome

    with pytest.raises(UnreadableMessage):
        OutcomeMessage.from_data(data | change, secret=_secret())


def test_a_job_message_with_a_stray_kind_field_is_still_a_job_message_refused_by_name(aws):
    body = json.loads(_job().to_json()) | {"kind": "urgent"}

    assert work.receive(Delivery(message_id="m1", body=json.dumps(body))) is Outcome.UNREADABLE
    assert "unknown field 'kind'" in record(body["id"]).error  # recorded dead with the reason, as before


# The init phase ---------------------------------------------------------------------------------------


def test_the_init_phase_reads_the_id_secret_and_survives_a_store_that_fails(aws, monkeypatch):
    from shared.store.id_secret import id_secret

    id_secret.cache_clear()
    worker.prepare()
    assert id_secret.cache_info().currsize == 1  # read before the first delivery: not on a job's clock

    id_secret.cache_clear()
    environment.change(table="no-such-table")  # every store call fails
    worker.prepare()  # does not raise: the first delivery reads it, or hands back
    assert id_secret.cache_info().currsize == 0


def test_after_the_init_phase_a_batch_makes_no_client(aws, monkeypatch):
    # A client made at a batch's start (its service model loaded, its first request's serializers built)
    # held each environment's first batch ~250 ms on a busy machine before any of its jobs started.
    from shared.aws import clients

    clients.client.cache_clear()
    clients.single_attempt_client.cache_clear()
    worker.prepare()
    made: list[str] = []
    session_client = boto3.session.Session.client

    def counted(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        made.append(service)
        return session_client(self, service, *args, **kwargs)

    monkeypatch.setattr(boto3.session.Session, "client", counted)
    jobs = [_job(payload=payload) for payload in range(3)]
    for job in jobs:
        send(aws, job.to_json())
    assert work.poll(aws) is not None
    assert [record(job.id).status for job in jobs] == [Status.SUCCEEDED] * 3
    assert made == []


# A batch's outcome writes overlap its next jobs ---------------------------------------------------------


def test_the_next_job_of_a_batch_starts_while_the_previous_outcome_is_being_written(aws, monkeypatch):
    writes: list[tuple[float, float]] = []
    complete = job_store.complete

    def slow_complete(*args: Any, **kwargs: Any) -> bool:
        began = time.time()
        time.sleep(0.3)
        written = complete(*args, **kwargs)
        writes.append((began, time.time()))
        return written

    monkeypatch.setattr(job_store, "complete", slow_complete)
    jobs = [_job(payload=n) for n in range(3)]
    for job in jobs:
        send(aws, job.to_json())
    assert poll(aws).failed == []

    starts = sorted(record(job.id).started_at for job in jobs)
    assert all(record(job.id).status is Status.SUCCEEDED for job in jobs)  # every write done when the batch answers
    assert len(writes) == 3
    assert starts[-1] < min(ended for _, ended in writes)  # the last job started before any write ended


def test_an_outcome_write_that_fails_after_its_record_was_answered_hands_the_message_back(aws, monkeypatch):
    monkeypatch.setattr(job_store, "complete", _throttled)
    monkeypatch.setattr(queue, "send_outcomes", _throttled)
    job = _job()
    send(aws, job.to_json())

    batch = poll(aws)

    assert batch is not None and batch.failed == batch.message_ids  # comes back when the lease ends
    assert record(job.id).status is Status.RUNNING
