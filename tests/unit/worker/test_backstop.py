"""Nothing reaches the DLQ unrecorded (shared/worker/complete/backstop.py): a message SQS moves to the backstop after
the jobs queue's receive budget, or one moved there by hand, ends its job `dead` with the reason, sets off
what a dead job's end sets off (its `on_failure`, its batch's count), is buried in the DLQ with the reason
for operators to redrive, and is counted for the PlatformDeadLetters alarm: once, however often it is seen.

The worker handler is driven as its two event sources would drive it (tests/unit/worker_harness.py):
`poll(aws, url_key="backstop_url")` is the backstop's.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import moto.core
import moto.sqs.models
import pytest

from functions.api.handler import handler as api_handler
from functions.worker.handler import worker
from local.events import FakeLambdaContext, http_api_event
from shared import environment
from shared.aws import queue
from shared.batches import follow_ups
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.outcome import OutcomeMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.operations import dead_letters
from shared.store.jobs import job_claims
from shared.tenants import tenants
from shared.worker.verdicts import WAITING_ATTRIBUTE, Waited
from tests.unit.worker_harness import dead_letters as dlq_messages
from tests.unit.worker_harness import messages_held, poll, record

UNRECORDED = "no outcome recorded"


@pytest.fixture
def key(aws) -> str:
    return tenants.create_key("acme")


@pytest.fixture
def counted(capsys: pytest.CaptureFixture[str]):
    """The worker's metrics printed since the last call (the handler flushes them as EMF lines), summed."""

    def read() -> dict[str, float]:
        found: dict[str, float] = {}
        for line in capsys.readouterr().out.splitlines():
            if not (line.startswith("{") and '"_aws"' in line):
                continue
            emf = json.loads(line)
            for metric in emf["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
                value = emf[metric["Name"]]
                found[metric["Name"]] = found.get(metric["Name"], 0) + (
                    sum(value) if isinstance(value, list) else value
                )
        return found

    return read


def _post(key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = api_handler(http_api_event("POST", path, body, key), FakeLambdaContext())
    assert answer["statusCode"] in (201, 202), answer["body"]
    return json.loads(answer["body"])


def _get(key: str, path: str) -> dict[str, Any]:
    return json.loads(api_handler(http_api_event("GET", path, None, key), FakeLambdaContext())["body"])


def _take_from_the_queue(aws: dict[str, Any], job_id: str) -> dict[str, Any]:
    """Receive the job's message from the jobs queue and delete it (the others go back): it leaves the queue."""
    sqs = aws["sqs"]
    for _ in range(20):
        for message in sqs.receive_message(
            QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, VisibilityTimeout=0, MessageAttributeNames=["All"]
        ).get("Messages", []):
            if json.loads(message["Body"]).get("id") == job_id:
                sqs.delete_message(QueueUrl=aws["queue_url"], ReceiptHandle=message["ReceiptHandle"])
                return message
    raise AssertionError(f"no message of {job_id} on the queue")


def _to_the_backstop(aws: dict[str, Any], body: str, attributes: dict[str, str] | None = None) -> None:
    """A message put in the backstop behind the platform's back (as SQS's redrive or an operator would)."""
    extra = {name: {"DataType": "String", "StringValue": value} for name, value in (attributes or {}).items()}
    aws["sqs"].send_message(QueueUrl=aws["backstop_url"], MessageBody=body, MessageAttributes=extra)


def _drain(aws: dict[str, Any], url_key: str = "queue_url") -> None:
    for _ in range(20):
        if poll(aws, url_key=url_key) is None:
            return


def test_a_job_sqs_moved_after_the_receive_budget_ends_dead_sets_off_on_failure_and_can_be_redriven(aws, key):
    sqs = aws["sqs"]
    backstop_arn = sqs.get_queue_attributes(QueueUrl=aws["backstop_url"], AttributeNames=["QueueArn"])
    redrive = {"deadLetterTargetArn": backstop_arn["Attributes"]["QueueArn"], "maxReceiveCount": 2}
    url = sqs.create_queue(QueueName="corral-short", Attributes={"RedrivePolicy": json.dumps(redrive)})["QueueUrl"]
    environment.change(queue_url=url, receive_budget=2)
    aws = {**aws, "queue_url": url}
    accepted = _post(key, "/v1/jobs", {"type": "echo", "payload": {"n": 1}, "on_failure": {"type": "echo"}})
    for _ in range(2):  # two workers die before answering: SQS's next receive moves the message
        assert sqs.receive_message(QueueUrl=url, VisibilityTimeout=0).get("Messages")
    assert sqs.receive_message(QueueUrl=url).get("Messages") is None
    assert messages_held(aws, "backstop_url") == 1

    batch = poll(aws, url_key="backstop_url")

    assert batch is not None and batch.failed == []
    job = record(accepted["id"])
    assert job.status is Status.DEAD and UNRECORDED in job.error and "received 2 times" in job.error
    assert _get(key, f"/v1/jobs/{accepted['id']}")["status"] == "dead"
    ((body, reason),) = dlq_messages(aws)
    assert json.loads(body)["id"] == accepted["id"] and reason == job.error
    assert messages_held(aws, "backstop_url") == 0
    _drain(aws)  # the on_failure callback, enqueued by the record's follow-ups
    callback = record(record(accepted["id"]).callbacks["on_failure"])
    assert callback.status is Status.SUCCEEDED and callback.result["parent"]["status"] == "dead"

    # The operators' redrive still works from the DLQ: the job runs again, same id.
    _release(aws, "dlq_url")
    report = dead_letters.redrive()
    assert report.redriven == [accepted["id"]]
    _drain(aws)
    assert record(accepted["id"]).status is Status.SUCCEEDED


def test_a_batch_member_moved_by_hand_is_counted_dead_in_its_batch(aws, key):
    created = _post(key, "/v1/batches", {"jobs": [{"type": "echo"}, {"type": "echo"}]})
    members = _get(key, f"/v1/batches/{created['id']}/jobs")["jobs"]
    moved = _take_from_the_queue(aws, members[0])
    _to_the_backstop(aws, moved["Body"])

    _drain(aws, "backstop_url")
    _drain(aws)

    shown = _get(key, f"/v1/batches/{created['id']}")
    assert (shown["status"], shown["succeeded"], shown["dead"], shown["pending"]) == (
        "completed_with_failures",
        1,
        1,
        0,
    )


def test_a_member_cancelled_before_any_worker_saw_it_is_counted_when_its_message_reaches_the_backstop(aws, key):
    # Found by tests/unit/test_invariant.py: the cancel writes a record that names no batch (no worker has read
    # the message yet), so only the message can count the member; in the backstop it was acknowledged as a
    # job that had ended, uncounted, and the batch stayed running with a member pending forever.
    callback = {"type": "echo", "payload": {}}
    created = _post(key, "/v1/batches", {"jobs": [{"type": "echo"}, {"type": "echo"}], "on_complete": callback})
    members = _get(key, f"/v1/batches/{created['id']}/jobs")["jobs"]
    cancelled = api_handler(http_api_event("POST", f"/v1/jobs/{members[0]}/cancel", None, key), FakeLambdaContext())
    assert cancelled["statusCode"] == 200
    _to_the_backstop(aws, _take_from_the_queue(aws, members[0])["Body"])

    _drain(aws, "backstop_url")
    _drain(aws)

    shown = _get(key, f"/v1/batches/{created['id']}")
    assert (shown["status"], shown["succeeded"], shown["cancelled"], shown["pending"]) == (
        "completed_with_failures",
        1,
        1,
        0,
    )
    assert record(shown["callbacks"]["on_complete"]).status is Status.SUCCEEDED
    assert dlq_messages(aws) == []  # a job that ended is nothing to redrive


def test_a_finished_jobs_callback_left_to_send_is_sent_when_its_message_reaches_the_backstop(aws, key, monkeypatch):
    # The job is recorded, but the store fails before its on_success is sent: its delivery is handed back to send
    # it. If that message then reaches the backstop (a long outage spends the receive budget), the backstop's
    # worker must send it, not acknowledge the message as one left over of a job that ended.
    accepted = _post(key, "/v1/jobs", {"type": "echo", "on_success": {"type": "echo"}})
    real = follow_ups.job_ended

    def store_fails(*args, **kwargs):
        raise queue.client("sqs").exceptions.ClientError({"Error": {"Code": "ServiceUnavailable"}}, "GetItem")

    monkeypatch.setattr(follow_ups, "job_ended", store_fails)
    assert poll(aws).failed != []  # recorded, and handed back for its callback
    monkeypatch.setattr(follow_ups, "job_ended", real)
    assert record(accepted["id"]).status is Status.SUCCEEDED
    _release(aws, "queue_url")
    _to_the_backstop(aws, _take_from_the_queue(aws, accepted["id"])["Body"])
    worker.breaker.down_until = 0.0  # the in-process cooldown is real time; the test moves past it

    _drain(aws, "backstop_url")
    _drain(aws)

    on_success = record(accepted["id"]).callbacks["on_success"]
    assert on_success is not None and record(on_success).status is Status.SUCCEEDED


def test_the_same_message_seen_twice_records_its_job_once(aws, key, counted):
    accepted = _post(key, "/v1/jobs", {"type": "echo", "on_failure": {"type": "echo"}})
    _to_the_backstop(aws, _take_from_the_queue(aws, accepted["id"])["Body"])
    counted()

    assert poll(aws, url_key="backstop_url", delete=False).failed == []  # the event source's delete is lost
    first = record(accepted["id"])
    _release(aws, "backstop_url")
    assert poll(aws, url_key="backstop_url").failed == []

    again = record(accepted["id"])
    assert (again.status, again.finished_at, again.error) == (Status.DEAD, first.finished_at, first.error)
    callbacks = [json.loads(m["Body"]) for m in _all(aws, "queue_url")]
    assert [c["parent"]["id"] for c in callbacks] == [accepted["id"]]  # on_failure enqueued once
    seen = counted()
    assert (seen.get("BackstopDeadLetters"), seen.get("PlatformDeadLetters")) == (1, 1)  # counted once
    assert messages_held(aws, "backstop_url") == 0
    # Buried at least once (a second copy is harmless: a redrive finds the first copy's job sent already).
    assert {json.loads(body)["id"] for body, _ in dlq_messages(aws)} == {accepted["id"]}


def _all(aws: dict[str, Any], url_key: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while got := aws["sqs"].receive_message(QueueUrl=aws[url_key], MaxNumberOfMessages=10).get("Messages", []):
        found += got
    return found


def _release(aws: dict[str, Any], url_key: str) -> None:
    """Make a queue's hidden messages visible again at once (as their visibility timeout ending would)."""
    backend = moto.sqs.models.sqs_backends[moto.core.DEFAULT_ACCOUNT_ID]["us-east-1"]
    for message in backend.queues[aws[url_key].rsplit("/", 1)[-1]]._messages:
        message.change_visibility(0)


def test_an_unreadable_or_id_less_message_is_counted_and_kept_in_the_dlq_with_its_reason(aws, counted):
    _to_the_backstop(aws, "not json at all")
    _to_the_backstop(aws, json.dumps({"tenant": "acme", "type": "echo", "payload": None}))
    counted()

    _drain(aws, "backstop_url")

    kept = dict(dlq_messages(aws))
    assert set(kept) == {"not json at all", json.dumps({"tenant": "acme", "type": "echo", "payload": None})}
    assert all(UNRECORDED in reason and "it cannot run" in reason for reason in kept.values())
    seen = counted()
    assert (seen.get("UnreadableMessages"), seen.get("PlatformDeadLetters")) == (2, 2)
    assert messages_held(aws, "backstop_url") == 0


def test_a_message_left_over_of_a_finished_job_is_acknowledged_and_its_record_kept(aws, key):
    accepted = _post(key, "/v1/jobs", {"type": "echo", "payload": 7})
    body = _take_from_the_queue(aws, accepted["id"])["Body"]
    aws["sqs"].send_message(QueueUrl=aws["queue_url"], MessageBody=body)
    _drain(aws)
    assert record(accepted["id"]).status is Status.SUCCEEDED
    _to_the_backstop(aws, body)

    _drain(aws, "backstop_url")

    assert (record(accepted["id"]).status, record(accepted["id"]).result) == (Status.SUCCEEDED, 7)
    assert dlq_messages(aws) == [] and messages_held(aws, "backstop_url") == 0


def test_a_job_an_attempt_still_holds_waits_for_its_lease_in_the_backstop(aws):
    message = build_message("acme", JobRequest(JobSpec("echo", payload=1)), time.time())
    claim = job_claims.claim(message, "another-message", time.time(), 60)
    assert isinstance(claim, job_claims.Claimed)
    _to_the_backstop(aws, message.to_json())

    batch = poll(aws, url_key="backstop_url")

    assert batch is not None and len(batch.failed) == 1  # handed back until the lease ends
    assert record(message.id).status is Status.RUNNING and dlq_messages(aws) == []


def test_a_succeeded_outcome_in_the_backstop_is_recorded_not_buried(aws):
    message = build_message("acme", JobRequest(JobSpec("echo", payload=1)), time.time())
    outcome = OutcomeMessage(message, Status.SUCCEEDED, time.time() - 1, time.time(), result={"ran": True})
    _to_the_backstop(aws, outcome.to_json())

    _drain(aws, "backstop_url")

    assert (record(message.id).status, record(message.id).result) == (Status.SUCCEEDED, {"ran": True})
    assert dlq_messages(aws) == []


def _waited_a_day() -> dict[str, str]:
    waited = Waited(since=time.time() - 86_400, why="its concurrency key", receives=99)
    return {WAITING_ATTRIBUTE: waited.to_attribute()}


@pytest.mark.parametrize(
    ("attributes", "said"),
    [
        (lambda: {"ERROR_CODE": "AWS.SQS.QueueDoesNotExist"}, r"EventBridge Scheduler could not deliver the firing"),
        (_waited_a_day, r"it had waited 86\d{3} s for its concurrency key"),
    ],
)
def test_the_reason_says_what_the_message_carried(aws, attributes, said):
    message = build_message("acme", JobRequest(JobSpec("echo", payload=1)), time.time())
    _to_the_backstop(aws, message.to_json(), attributes())

    _drain(aws, "backstop_url")

    assert re.search(said, record(message.id).error)
    ((_, reason),) = dlq_messages(aws)
    assert re.search(said, reason)
