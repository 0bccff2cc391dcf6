"""A long store outage moves no unrun job to the DLQ: hand-back delays grow with the receive count.

The job here is of an exclusive type: a job that may run without the claim does so on its first
delivery (tests/unit/worker/test_store_blips.py); an exclusive one waits for the store, which is what
the hand-back arithmetic is for.

Time is virtual: moto's SQS reads the clock below, and each hand-back moves it on by the delay the
worker asked for, so an hour of outage (and SQS's own redrive after maxReceiveCount) takes seconds.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pytest
from botocore.exceptions import ClientError

from functions.worker.handler import worker
from shared import environment, profiles, settings
from shared.aws import queue
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.jobs import job_claims
from shared.worker.delivery import hand_back_floor_seconds
from tests.unit.worker_harness import VirtualClock, poll, record, send

AWS = profiles.PROFILES["aws"]


def _outage_of(seconds: float, *, budget: int, aws: dict, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int, list]:
    """Enqueue one job, keep the store down for `seconds` of virtual time, and let the worker poll
    until the job is done or SQS has moved it to the DLQ. Returns (where it ended, receives, delays)."""
    sqs = aws["sqs"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=aws["dlq_url"], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": budget})
    url = sqs.create_queue(QueueName="corral-outage", Attributes={"RedrivePolicy": redrive})["QueueUrl"]
    environment.change(queue_url=url)
    clock = VirtualClock(time.time()).install(monkeypatch)
    outage_ends = clock.now + seconds

    claim = job_claims.claim

    def claim_while_the_store_is_down(*args, **kwargs):
        if clock.now < outage_ends:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "down"}}, "UpdateItem")
        return claim(*args, **kwargs)

    monkeypatch.setattr(job_claims, "claim", claim_while_the_store_is_down)
    echo = job_types.lookup("echo")
    monkeypatch.setitem(job_types._REGISTRY, "echo", dataclasses.replace(echo, exclusive=True))
    delays: list[float] = []
    retry_later = queue.retry_later

    def spy(receipt_handle: str, delay_seconds: float, **where: str | None) -> None:
        delays.append(delay_seconds)
        retry_later(receipt_handle, delay_seconds, **where)

    monkeypatch.setattr(queue, "retry_later", spy)
    message = build_message("acme", JobRequest(JobSpec("echo", payload="survived")), clock.now)
    send({**aws, "queue_url": url}, message.to_json())

    for receives in range(1, budget + 2):
        # Each delivery is a fresh look at the store: the in-process cooldown (2 s of real time)
        # hands back the same way, with the same receive-count delay, so skipping it changes nothing.
        monkeypatch.setattr(worker.breaker, "down_until", 0.0)
        batch = poll({**aws, "queue_url": url})
        if batch is None:
            assert sqs.receive_message(QueueUrl=aws["dlq_url"]).get("Messages"), "neither run nor dead-lettered"
            return "dlq", receives - 1, delays
        if not batch.failed:
            assert record(message.id).status is Status.SUCCEEDED
            return "ran", receives, delays
        clock.now += delays[-1] + 0.001
    raise AssertionError("still cycling after the whole receive budget")


def test_an_hour_of_store_outage_on_the_aws_profile_moves_no_unrun_job_to_the_dlq(aws, monkeypatch):
    environment.change(hand_back_max_seconds=AWS.visibility_timeout_seconds)

    ended, receives, delays = _outage_of(3600, budget=settings.MAX_RECEIVE_COUNT, aws=aws, monkeypatch=monkeypatch)

    assert ended == "ran"
    assert sum(delays) >= 3600
    assert receives < settings.MAX_RECEIVE_COUNT * 0.6  # with room to spare
    assert max(delays) <= AWS.visibility_timeout_seconds


def _survivable_outage_seconds(receive_budget: int, unit: float, cap: float) -> float:
    """How long the store can be down before a never-run message reaches the DLQ: the hand-backs of
    every receive but the last (the receive past the budget moves it to the DLQ)."""
    return sum(hand_back_floor_seconds(n, unit, cap) for n in range(1, receive_budget))


def test_the_aws_profile_survives_over_three_hours_of_outage_by_the_arithmetic():
    survivable = _survivable_outage_seconds(settings.MAX_RECEIVE_COUNT, 1.0, AWS.visibility_timeout_seconds)
    assert survivable > 3 * 3600  # docs/decisions/hand-backs.md: 59,982 s


@pytest.mark.parametrize("budget", [8, 12])
def test_compressed_an_outage_within_the_budget_runs_the_job_and_one_beyond_it_is_redriven(aws, monkeypatch, budget):
    # Small numbers: a 1 s unit and a 6 s cap, and a receive budget of 8 or 12.
    environment.change(hand_back_unit_seconds=1)
    environment.change(hand_back_max_seconds=6)
    survivable = _survivable_outage_seconds(budget, 1.0, 6.0)

    with monkeypatch.context() as inner:
        assert _outage_of(survivable - 1, budget=budget, aws=aws, monkeypatch=inner)[0] == "ran"
    aws["sqs"].delete_queue(QueueUrl=aws["sqs"].get_queue_url(QueueName="corral-outage")["QueueUrl"])
    with monkeypatch.context() as inner:
        assert _outage_of(survivable * 2, budget=budget, aws=aws, monkeypatch=inner)[0] == "dlq"


def test_a_flat_hand_back_of_one_or_two_seconds_would_dead_letter_the_job(aws, monkeypatch):
    environment.change(hand_back_max_seconds=2)

    ended, _, _ = _outage_of(3600, budget=settings.MAX_RECEIVE_COUNT, aws=aws, monkeypatch=monkeypatch)

    assert ended == "dlq"
