"""The worker Lambda's handler driven in-process on moto, with the event source mapping's part played here:
messages go through the (moto) queue, so receipt handles, receive counts and hand-backs are SQS's own.

`work` and `receive` drive the worker without the queue: one delivery, made in process, settled as
in a batch of one, its writes waited for; RetryLater for a delivery handed back."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import moto.sqs.models
import pytest

from functions.worker.handler import handler, worker
from shared.model.message import JobMessage
from shared.model.outcome import Outcome
from shared.model.record import JobRecord
from shared.store.jobs import job_store
from shared.worker import batch as worker_batch
from shared.worker import receive as worker_receive
from shared.worker.complete.completer import Settled
from shared.worker.delivery import Delivery
from shared.worker.verdicts import HandBack


class VirtualClock:
    """The clock moto's SQS reads (visibility, delays, receive counts' redrive): moved on by a test, so
    hours of hand-backs take seconds."""

    def __init__(self, now: float) -> None:
        self.now = now

    def seconds(self) -> float:
        return self.now

    def millis(self) -> float:
        return self.now * 1000

    def install(self, monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
        monkeypatch.setattr(moto.sqs.models, "unix_time", self.seconds)
        monkeypatch.setattr(moto.sqs.models, "unix_time_millis", self.millis)
        return self


class WorkerContext:
    """The attributes Powertools reads from a Lambda context."""

    function_name = "corral-worker"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:corral-worker"
    memory_limit_in_mb = 1024
    aws_request_id = "unit"
    log_group_name = "/aws/lambda/corral-worker"
    log_stream_name = "unit"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000  # a fresh invocation of the aws profile's worker: any job's timeout fits


@dataclass(frozen=True)
class Batch:
    message_ids: list[str]
    failed: list[str]  # message ids handed back (batchItemFailures)


def send(aws: dict[str, Any], body: str) -> str:
    return aws["sqs"].send_message(QueueUrl=aws["queue_url"], MessageBody=body)["MessageId"]


def event_record(message: dict[str, Any], source_queue: str = "corral-jobs") -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message["Attributes"],
        "messageAttributes": {  # as Lambda's event shows them
            name: {"stringValue": value.get("StringValue"), "dataType": value["DataType"]}
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:us-east-1:123456789012:{source_queue}",
        "awsRegion": "us-east-1",
    }


def poll(aws: dict[str, Any], *, url_key: str = "queue_url", delete: bool = True) -> Batch | None:
    """One poll of the event source mapping of `aws[url_key]` (the jobs queue; "backstop_url": the
    backstop's): receive up to 10 messages, invoke the handler, delete what it did not hand back (not if
    `delete` is False: the event source's delete failed). None if nothing was visible."""
    sqs, url = aws["sqs"], aws[url_key]
    messages = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"]
    ).get("Messages", [])
    if not messages:
        return None
    source = url.rsplit("/", 1)[-1]
    response = handler({"Records": [event_record(m, source) for m in messages]}, WorkerContext())
    failed = [item["itemIdentifier"] for item in response["batchItemFailures"]]
    for message in messages:
        if delete and message["MessageId"] not in failed:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return Batch(message_ids=[m["MessageId"] for m in messages], failed=failed)


def deliver(aws: dict[str, Any], body: str) -> Batch:
    """Send one message and run it through the handler once."""
    send(aws, body)
    batch = poll(aws)
    assert batch is not None
    return batch


def messages_held(aws: dict[str, Any], url_key: str = "queue_url") -> int:
    """How many messages a queue holds, visible, in flight or delayed (read without a receive, which counts)."""
    names = [f"ApproximateNumberOfMessages{kind}" for kind in ("", "NotVisible", "Delayed")]
    found = aws["sqs"].get_queue_attributes(QueueUrl=aws[url_key], AttributeNames=names)["Attributes"]
    return sum(int(found[name]) for name in names)


def dead_letters(aws: dict[str, Any]) -> list[tuple[str, str]]:
    """(body, reason) of every message in the DLQ."""
    found: list[tuple[str, str]] = []
    sqs, url = aws["sqs"], aws["dlq_url"]
    while messages := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=60
    ).get("Messages", []):
        found += [(m["Body"], _reason(m)) for m in messages]
    return found


def record(job_id: str) -> JobRecord | None:
    return job_store.get(job_id)


class RetryLater(Exception):
    """The worker handed the delivery back: it comes back after `seconds`."""

    def __init__(self, seconds: float, reason: str) -> None:
        super().__init__(f"retry in {seconds:.0f}s: {reason}")
        self.seconds = seconds
        self.reason = reason


def _settled(handle: Callable[[worker_batch.Batch], Settled]) -> Outcome:
    batch = worker.batch([])
    try:
        settled = handle(batch)
    finally:
        late = batch.finish()
    for each in late:  # its outcome write or outcome message failed after it was answered
        if each.error is not None:
            raise each.error
        settled = each.hand_back
    if isinstance(settled, HandBack):
        raise RetryLater(settled.delay_seconds, settled.reason)
    return settled


def work(message: JobMessage, delivery: Delivery) -> Outcome:
    """Claim and run the job of a readable message (shared/worker/receive.py `work`)."""
    return _settled(lambda batch: batch.completer.settle(worker_receive.work(message, delivery, batch), delivery))


def receive(delivery: Delivery) -> Outcome:
    """Handle one delivery of a queue message (shared/worker/receive.py `handle`)."""
    return _settled(lambda batch: worker_receive.handle(delivery, batch))


def job_message(
    job_type: str, payload: Any = None, *, max_attempts: int = 3, timeout_seconds: int | None = None
) -> JobMessage:
    """A job's message as the API would build it (id `jt-<type>`, tenant acme), for `deliver_once`."""
    return JobMessage(
        id=f"jt-{job_type}",
        tenant="acme",
        type=job_type,
        payload=payload,
        max_attempts=max_attempts,
        enqueued_at=time.time(),
        timeout_seconds=timeout_seconds,
    )


def deliver_once(message: JobMessage) -> Outcome:
    """The message's first delivery, worked as in a batch of one."""
    return work(message, Delivery(message_id="m1", body=message.to_json()))


def body(**fields: Any) -> str:
    return json.dumps(fields)


def _reason(message: dict[str, Any]) -> str:
    """The worker's reason; "" for a message SQS itself redrove (maxReceiveCount)."""
    return message.get("MessageAttributes", {}).get("corral-reason", {}).get("StringValue", "")
