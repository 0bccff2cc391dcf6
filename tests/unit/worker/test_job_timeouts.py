"""Timeouts: the alarm that stops a job, the retry that follows, and how long a message stays hidden."""

import threading
import time

import pytest

from shared import environment
from shared.environment import FunctionEnv
from shared.execution import time_limit
from shared.jobs import job_types
from shared.model.states import Status
from shared.store.jobs import job_store
from shared.worker.run import cover
from tests.unit.worker_harness import RetryLater, deliver_once, job_message


@job_types.job_type("unit_swallows_errors", timeout_seconds=1)
def _swallows_errors(payload: object, context: job_types.JobContext) -> str:
    """A job that catches every Exception around a slow call: the timeout must still stop it."""
    try:
        time.sleep(5)
    except Exception:  # the point of the test
        return "swallowed"
    return "slept"


@job_types.job_type("unit_dead_at_once")
def _dead_at_once(payload: object, context: job_types.JobContext) -> None:
    raise job_types.JobDead("the target said 400")


@job_types.job_type("unit_retry_after")
def _retry_after(payload: object, context: job_types.JobContext) -> None:
    raise job_types.JobFailed("busy", retry_after=7)


def test_run_within_ends_an_attempt_on_time_even_while_its_job_blocks():
    released, returned = threading.Event(), threading.Event()

    def blocked() -> None:
        released.wait(30)
        returned.set()

    with pytest.raises(job_types.JobTimedOut, match="timed out after 1 s"):
        time_limit.run_within(1, blocked)
    assert not returned.is_set()  # the attempt ended while its job was still blocked
    released.set()


def test_run_within_stops_a_busy_python_job_at_its_timeout():
    spins = []

    def spin() -> None:
        while True:  # pure Python: the exception sent to its thread stops it at its next instruction
            spins.append(1)
            spins.clear()

    detached_before = time_limit.detached_jobs()
    with pytest.raises(job_types.JobTimedOut):
        time_limit.run_within(0.3, spin)
    assert time_limit.detached_jobs() == detached_before  # it stopped within the grace: nothing left running


def test_run_within_returns_what_the_job_returns_and_raises_what_it_raises():
    assert time_limit.run_within(1, lambda: 42) == 42
    with pytest.raises(ZeroDivisionError):
        time_limit.run_within(1, lambda: 1 / 0)


def test_a_job_past_its_own_timeout_fails_the_attempt_and_is_retried(aws):
    detached_before = time_limit.detached_jobs()
    with pytest.raises(RetryLater):
        deliver_once(job_message("sleep", {"seconds": 30}, timeout_seconds=1))

    record = job_store.get("jt-sleep")
    assert record.status is Status.FAILED
    assert record.error == "timed out after 1 s"
    assert time_limit.detached_jobs() == detached_before  # the built-in sleep naps in slices: it stopped


def test_a_job_that_catches_exception_is_still_stopped(aws):
    with pytest.raises(RetryLater):
        deliver_once(job_message("unit_swallows_errors"))
    record = job_store.get("jt-unit_swallows_errors")
    assert record.error == "timed out after 1 s"


def test_the_alarm_is_cleared_after_a_job_that_finishes_in_time(aws):
    assert deliver_once(job_message("sleep", {"seconds": 0.1}, timeout_seconds=1)) == "succeeded"
    time.sleep(1.2)  # an alarm left armed would fire here


def test_the_worker_ceiling_caps_a_job_timeout(aws, monkeypatch):
    environment.change(job_timeout_ceiling=3)
    assert cover.timeout_of(job_message("sleep", timeout_seconds=600)) == 3
    assert cover.timeout_of(job_message("echo")) == 3
    environment.change(job_timeout_ceiling=FunctionEnv().job_timeout_ceiling)
    assert cover.timeout_of(job_message("sleep", timeout_seconds=600)) == 600
    assert cover.timeout_of(job_message("echo")) == 30  # the type's default


def test_a_claim_leases_the_job_for_its_timeout_plus_the_margin_within_the_workers_lease(aws, monkeypatch):
    environment.change(lease_seconds=905)
    assert cover.lease_seconds(30) == 40
    assert cover.lease_seconds(900) == 905


def test_job_dead_ends_the_job_at_its_first_attempt(aws):
    assert deliver_once(job_message("unit_dead_at_once")) == "dead"
    record = job_store.get("jt-unit_dead_at_once")
    assert record.status is Status.DEAD
    assert record.attempts == 1


def test_a_jobs_retry_after_chooses_when_it_comes_back(aws):
    with pytest.raises(RetryLater) as later:
        deliver_once(job_message("unit_retry_after"))
    assert later.value.seconds == 7


@pytest.mark.parametrize(
    ("timeouts", "seconds_left", "expected"),
    [
        # AWS, ten default (30 s) jobs in a 900 s invocation: each is back 30 s + the margin after the batch
        # began if the worker dies, not after the queue's visibility timeout.
        ([30] * 10, 900, [40] * 10),
        # A 15-minute job and a short one: each covered for its own timeout, never longer than the invocation.
        ([898, 30], 900, [908, 40]),
        ([5, 600, 600], 900, [15, 610, 610]),
        # The local profile: 3 s jobs in a 5 s invocation.
        ([3, 3, 3], 5, [13, 13, 13]),
        ([30, 3], 5, [15, 13]),
    ],
)
def test_a_batch_begins_with_each_message_hidden_for_its_own_jobs_timeout(timeouts, seconds_left, expected):
    # The batch's jobs start together: each message is covered for its own job.
    assert [cover.cover_seconds(own, seconds_left) for own in timeouts] == expected


def test_a_hidden_batch_sets_each_received_messages_visibility(aws, monkeypatch):
    sqs, url = aws["sqs"], aws["queue_url"]
    for body in ('{"type":"sleep","timeout_seconds":5}', "not json"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600)["Messages"]
    assert len(received) == 2
    monkeypatch.setattr(cover, "MARGIN_SECONDS", 0)

    # With 1 s of invocation left, neither message can be running after 1 s: both are back then, not after 600 s.
    cover.HiddenBatch([(m["ReceiptHandle"], m["Body"], None) for m in received]).begin(seconds_left=1)

    time.sleep(1.5)
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    assert sorted(m["Body"] for m in again) == sorted(m["Body"] for m in received)
