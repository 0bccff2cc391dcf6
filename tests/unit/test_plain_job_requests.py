"""What a plain job costs in AWS requests: its enqueue and its delivery, counted call by call.

The features a plain job does not use (batches, callbacks, concurrency keys, durable steps, flow control)
must cost it nothing: a request added to this path fails this test, which names it. A change that adds one
on purpose updates the tables below and says, in docs/decisions/the-limit-and-a-peer.md, what it buys."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import botocore.client
import pytest

from functions.api.handler import handler as api_handler
from functions.worker.handler import handler as worker_handler
from local.events import FakeLambdaContext, http_api_event
from shared.tenants import tenants
from tests.unit.worker_harness import WorkerContext, event_record, record

JOBS = 10  # a full batch of the event source

# (service, operation, the item kind written or "") -> how many for JOBS plain jobs, and what each buys.
ENQUEUES = Counter({("sqs", "SendMessage", ""): JOBS})  # the job's message: nothing is written before it runs
DELIVERY = Counter(
    {
        ("dynamodb", "UpdateItem", "job"): 2 * JOBS,  # the claim (one attempt at a time, a cancel seen) and the outcome
        (
            "dynamodb",
            "UpdateItem",
            "running",
        ): 2,  # the batch's running slots (every tenant's fair share): take, give back
        ("sqs", "ChangeMessageVisibilityBatch", ""): 1,  # the batch's cover: its messages hidden for the jobs' timeouts
    }
)
# The rate limiter reports an environment's demand at most once in settings' FRESH_SECONDS, whatever the rate.
RATE_REPORTS = ("dynamodb", "UpdateItem", "ratewin")


@contextmanager
def _counted() -> Iterator[Counter[tuple[str, str, str]]]:
    """Every AWS request the code under test makes, by service, operation and the kind of item it writes."""
    calls: Counter[tuple[str, str, str]] = Counter()
    make_api_call = botocore.client.BaseClient._make_api_call

    def counting(self: botocore.client.BaseClient, operation: str, params: dict[str, Any]) -> Any:
        item = params.get("Key", {}).get("pk", {}).get("S", "").split("#")[0]
        calls[(self.meta.service_model.service_name, operation, item)] += 1
        return make_api_call(self, operation, params)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(botocore.client.BaseClient, "_make_api_call", counting)
        yield calls


def _enqueue(key: str) -> str:
    body = {"type": "echo", "payload": {"n": 1}}
    answer = api_handler(http_api_event("POST", "/v1/jobs", body, key), FakeLambdaContext())
    assert answer["statusCode"] == 202, answer["body"]
    return json.loads(answer["body"])["id"]


def _deliver_all(aws: dict[str, Any], expected: int) -> Counter[tuple[str, str, str]]:
    """One delivery of `expected` messages as the event source makes it; the requests the worker made."""
    messages = aws["sqs"].receive_message(
        QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"]
    )["Messages"]
    assert len(messages) == expected
    with _counted() as calls:
        answer = worker_handler({"Records": [event_record(message) for message in messages]}, WorkerContext())
    assert answer == {"batchItemFailures": []}
    for message in messages:
        aws["sqs"].delete_message(QueueUrl=aws["queue_url"], ReceiptHandle=message["ReceiptHandle"])
    return calls


def _without_rate_reports(calls: Counter[tuple[str, str, str]]) -> Counter[tuple[str, str, str]]:
    reports = calls.pop(RATE_REPORTS, 0)
    assert reports <= 4, f"the rate limiter wrote {reports} times for {JOBS} enqueues"  # two writes a report
    return calls


def test_a_batch_of_plain_jobs_makes_only_the_requests_their_guarantees_need(aws) -> None:
    key = tenants.create_key("acme")
    warm = _enqueue(key)  # an environment's first enqueue also reads the key, the tenant and the id secret
    _deliver_all(aws, 1)
    assert record(warm).status == "succeeded"

    with _counted() as enqueues:
        jobs = [_enqueue(key) for _ in range(JOBS)]
    assert _without_rate_reports(enqueues) == ENQUEUES
    assert _deliver_all(aws, JOBS) == DELIVERY
    assert {record(job).status for job in jobs} == {"succeeded"}
