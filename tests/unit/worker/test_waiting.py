"""Waiting one's turn never spends the jobs queue's receive budget (shared/worker/admit/waiting.py): a job waiting
for its tenant's running cap or its concurrency key is sent again as a fresh message, carrying its wait,
before SQS would move it to the backstop; and a send whose old message survives runs the job once.

Time is virtual (moto's SQS reads the test's clock), so waits of many receives take seconds. The queue
here redrives after a scaled-down budget of 4 receives, and the worker sends a waiting job again at its
message's 3rd.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shared import environment, settings
from shared.aws import queue
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.message import JobMessage
from shared.model.spec import Concurrency, JobSpec
from shared.model.states import Status
from shared.store.tenants import running_slots
from shared.tenants import quotas
from shared.worker.admit import unclaimed, waiting
from shared.worker.delivery import Delivery, hand_back_floor_seconds
from shared.worker.verdicts import WAITING_ATTRIBUTE, Waited
from tests.unit.worker_harness import VirtualClock, messages_held, poll, record, send

BUDGET = 4  # the queue's maxReceiveCount here
RESEND_AT = 3
HELD_FOR_GOOD = 10**9  # a slot held elsewhere past any test's end (epoch seconds from now)


@pytest.fixture
def budget(aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`aws` with a jobs queue that moves a message to the backstop after BUDGET receives, the worker told
    so, and moto's clock virtual (`clock`)."""
    sqs = aws["sqs"]
    backstop_arn = sqs.get_queue_attributes(QueueUrl=aws["backstop_url"], AttributeNames=["QueueArn"])
    redrive = {"deadLetterTargetArn": backstop_arn["Attributes"]["QueueArn"], "maxReceiveCount": BUDGET}
    url = sqs.create_queue(QueueName="corral-budget", Attributes={"RedrivePolicy": json.dumps(redrive)})["QueueUrl"]
    environment.change(queue_url=url, receive_budget=BUDGET, wait_resend_at=RESEND_AT, hand_back_max_seconds=30)
    monkeypatch.setattr(settings, "KEY_WAIT_IN_BATCH_SECONDS", 0.05)  # a key's wait in its batch: not the point here
    return {**aws, "queue_url": url, "clock": VirtualClock(time.time()).install(monkeypatch)}


def _enqueue(aws: dict[str, Any], tenant: str, job_type: str = "echo", **options: Any) -> JobMessage:
    message = build_message(tenant, JobRequest(JobSpec(job_type, payload="waited"), **options), time.time())
    send(aws, message.to_json())
    return message


def _receives(aws: dict[str, Any], count: int, *, delete: bool = True) -> int:
    """Let the worker poll, the clock moving on while nothing is visible, until `count` receives were
    handled or nothing came for 10 minutes of virtual time (the message left the queue). How many were."""
    received = idle = 0
    while received < count and idle < 600:
        if poll(aws, delete=delete) is None:
            aws["clock"].now += 1
            idle += 1
        else:
            received, idle = received + 1, 0
    return received


def _in(aws: dict[str, Any], url_key: str) -> list[str]:
    """The bodies in a queue now (each looked at and hidden again for a virtual hour)."""
    sqs, bodies = aws["sqs"], []
    while found := sqs.receive_message(QueueUrl=aws[url_key], MaxNumberOfMessages=10, VisibilityTimeout=3600).get(
        "Messages", []
    ):
        bodies += [m["Body"] for m in found]
    return bodies


def _run_to_the_end(aws: dict[str, Any], job: JobMessage) -> None:
    for _ in range(20):
        if (found := record(job.id)) is not None and found.status.finished:
            return
        _receives(aws, 1)
    raise AssertionError(f"{job.id} never finished")


def test_R2_a_job_waiting_for_its_tenants_cap_past_the_receive_budget_keeps_its_place_then_runs(budget):
    quotas.set_limits("acme", max_running=1)
    now = time.time()
    running_slots.take("acme", "elsewhere", 1, running_slots.Cap(1, 1), until=now + HELD_FOR_GOOD, now=now)
    job = _enqueue(budget, "acme")

    assert _receives(budget, 3 * BUDGET) == 3 * BUDGET  # waited three budgets' worth of receives
    assert record(job.id) is None  # never claimed: no attempt used
    assert _in(budget, "backstop_url") == [] and _in(budget, "dlq_url") == []

    running_slots.give_back("acme", "elsewhere", 1)
    _run_to_the_end(budget, job)

    done = record(job.id)
    assert (done.status, done.attempts, done.result) == (Status.SUCCEEDED, 1, "waited")
    assert _in(budget, "backstop_url") == [] and _in(budget, "dlq_url") == []


def test_R2_a_job_waiting_for_its_concurrency_key_past_the_receive_budget_keeps_its_place_then_runs(budget):
    key = Concurrency("partner", 1)
    now = time.time()
    running_slots.take_each("acme", ["elsewhere"], running_slots.Cap(1, 1), now + HELD_FOR_GOOD, now, key=key.key)
    job = _enqueue(budget, "acme", concurrency=key)

    assert _receives(budget, 3 * BUDGET) == 3 * BUDGET
    assert record(job.id) is None
    assert _in(budget, "backstop_url") == [] and _in(budget, "dlq_url") == []

    running_slots.give_back("acme", "elsewhere", 1, key=key.key)
    _run_to_the_end(budget, job)

    assert (record(job.id).status, record(job.id).attempts) == (Status.SUCCEEDED, 1)
    assert _in(budget, "backstop_url") == [] and _in(budget, "dlq_url") == []


def test_a_waiting_job_sent_again_carries_its_wait_and_its_delays_keep_growing(budget, monkeypatch):
    quotas.set_limits("acme", max_running=1)
    now = time.time()
    running_slots.take("acme", "elsewhere", 1, running_slots.Cap(1, 1), until=now + HELD_FOR_GOOD, now=now)
    sent: list[tuple[int, Waited]] = []
    send_waiting = queue.send_waiting

    def spy(message: JobMessage, delay_seconds: int, attributes: dict[str, str]) -> None:
        sent.append((delay_seconds, Waited.from_attribute(attributes[WAITING_ATTRIBUTE])))
        send_waiting(message, delay_seconds, attributes)

    monkeypatch.setattr(queue, "send_waiting", spy)
    enqueued = time.time()
    job = _enqueue(budget, "acme")

    _receives(budget, 2 * RESEND_AT)

    assert [waited.receives for _, waited in sent] == [RESEND_AT, 2 * RESEND_AT]
    assert {waited.why for _, waited in sent} == {str(waiting.WaitReason.RUNNING_CAP)}
    assert sent[0][1].since == sent[1][1].since >= enqueued  # both since its first wait
    # Each delay counts every receive waited, over both messages: the second send's is the longer.
    assert sent[1][0] >= hand_back_floor_seconds(2 * RESEND_AT, settings.OVER_CAP_HAND_BACK_UNIT_SECONDS)
    assert sent[1][0] > sent[0][0]
    assert record(job.id) is None


def test_R2_a_job_sent_again_whose_old_message_was_not_deleted_runs_once(budget, monkeypatch):
    runs: list[object] = []
    monkeypatch.setitem(
        job_types._REGISTRY,
        "counted",
        job_types.JobType(name="counted", run=lambda payload, context: runs.append(payload), timeout_seconds=5),
    )
    quotas.set_limits("acme", max_running=2)
    now = time.time()
    running_slots.take("acme", "elsewhere", 2, running_slots.Cap(2, 1), until=now + HELD_FOR_GOOD, now=now)
    job = _enqueue(budget, "acme", "counted")
    _receives(budget, RESEND_AT - 1)

    # The receive that sends it again: the event source's delete of the old message fails.
    assert _receives(budget, 1, delete=False) == 1
    assert messages_held(budget) == 2  # two messages of the one job

    running_slots.give_back("acme", "elsewhere", 2)
    _receives(budget, 6)

    assert runs == ["waited"]  # one run of two messages
    done = record(job.id)
    assert (done.status, done.attempts) == (Status.SUCCEEDED, 1)
    assert messages_held(budget) == 0 and _in(budget, "backstop_url") == [] and _in(budget, "dlq_url") == []


def test_a_send_that_fails_hands_the_waiting_job_back_instead(aws, monkeypatch):
    def refused(*args: object) -> None:
        raise ClientError({"Error": {"Code": "InternalError", "Message": "down"}}, "SendMessage")

    monkeypatch.setattr(queue, "send_waiting", refused)
    environment.change(wait_resend_at=2)
    message = build_message("acme", JobRequest(JobSpec("echo", payload=1)), time.time())
    delivery = Delivery("m1", message.to_json(), receive_count=2, receipt_handle=None)
    wait = waiting.wait(message, delivery, waiting.WaitReason.CONCURRENCY_KEY, "its key is busy", unit=1.0)
    assert wait.resend

    from functions.worker.handler import worker

    batch = worker.batch([])
    try:
        settled = batch.completer.settle(wait, delivery)
    finally:
        batch.finish()

    assert settled == wait.hand_back()  # handed back: one receive spent, and the next one tries again


def test_only_a_message_at_the_resend_receive_is_sent_again(aws):
    environment.change(wait_resend_at=RESEND_AT)
    message = build_message("acme", JobRequest(JobSpec("echo", payload=1)), time.time())
    carried = {WAITING_ATTRIBUTE: Waited(since=1.0, why="its concurrency key", receives=7).to_attribute()}

    def wait_at(receive_count: int, attributes: dict[str, str] | None = None) -> Any:
        delivery = Delivery("m", message.to_json(), receive_count=receive_count, attributes=attributes or {})
        return waiting.wait(message, delivery, waiting.WaitReason.CONCURRENCY_KEY, "busy", unit=1.0)

    assert [wait_at(n).resend for n in (1, RESEND_AT - 1, RESEND_AT, RESEND_AT + 5)] == [False, False, True, True]
    later = wait_at(2, carried)
    assert (later.waited.since, later.waited.receives) == (1.0, 9)  # its first wait, and every receive since
    assert later.delay_seconds >= hand_back_floor_seconds(9, 1.0)
    assert Waited.from_attribute("not ours") is None
    assert Delivery("m", "{}", attributes={WAITING_ATTRIBUTE: "{}"}).waited is None


def test_a_waiting_jobs_message_sent_again_is_no_first_delivery_for_a_store_blip(aws):
    """A store blip runs only a job's first delivery without a claim; a waiting job's fresh message is not
    one (an earlier message of the job may have started an unclaimed run that died)."""
    message = build_message("acme", JobRequest(JobSpec("echo", payload=1)), time.time())
    carried = {WAITING_ATTRIBUTE: Waited(since=1.0, why="its tenant's running cap", receives=6).to_attribute()}

    assert unclaimed.may_run_unclaimed(message, Delivery("m", message.to_json()), first_run=True)
    assert not unclaimed.may_run_unclaimed(
        message, Delivery("m", message.to_json(), attributes=carried), first_run=True
    )
