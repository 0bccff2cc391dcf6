"""In-process AWS (moto) for unit tests of the domain and handlers: fast, no emulator."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber

from functions.worker.handler import worker
from shared import environment, settings
from shared.aws.clients import client, single_attempt_client
from shared.environment import FunctionEnv
from shared.flow.priority import Priority
from shared.jobs import stats, status
from shared.store import table_schema
from shared.store.id_secret import id_secret
from shared.tenants import operators, quotas, rate_limit, tenants


@pytest.fixture(autouse=True)
def function_env() -> Iterator[FunctionEnv]:
    """Each test starts from the environment a function with nothing deployed would read, and leaves
    none behind; a test changes fields with `environment.change(...)`."""
    environment.use(FunctionEnv())
    yield environment.current()
    environment.use(None)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A moto account with the corral table and queues; the functions' environment pointed at it."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    client.cache_clear()
    single_attempt_client.cache_clear()
    id_secret.cache_clear()
    monkeypatch.setattr(worker.breaker, "down_until", 0.0)  # each test starts with a store that has not failed
    tenants.clear_caches()
    operators.clear_cache()
    quotas.clear_cache()
    stats.clear_cache()
    status.clear_cache()
    rate_limit.reset()  # each test's tenants start with full buckets
    _serialize_moto(monkeypatch)
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        dynamodb.create_table(**table_schema.create_table_params())  # the schema the stack deploys
        sqs = boto3.client("sqs")
        dlq_url = sqs.create_queue(QueueName=settings.DLQ_NAME)["QueueUrl"]
        backstop_url = sqs.create_queue(QueueName=settings.BACKSTOP_NAME)["QueueUrl"]
        queue_url = sqs.create_queue(QueueName=settings.QUEUE_NAME)["QueueUrl"]
        # The priority lanes' queues beside the jobs queue (the default lane's): shared/aws/queue.py `lane_url`.
        lanes = {
            level: sqs.create_queue(QueueName=level.queue_name(settings.names()))["QueueUrl"] for level in Priority
        }

        def arn(url: str) -> str:
            return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

        environment.change(
            table=settings.TABLE_NAME,
            queue_url=queue_url,
            high_queue_url=lanes[Priority.HIGH],
            low_queue_url=lanes[Priority.LOW],
            high_queue_arn=arn(lanes[Priority.HIGH]),
            low_queue_arn=arn(lanes[Priority.LOW]),
            dlq_url=dlq_url,
            backstop_url=backstop_url,
            backstop_arn=sqs.get_queue_attributes(QueueUrl=backstop_url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ],
            lease_seconds=10,
        )
        yield {
            "queue_url": queue_url,
            "lane_urls": lanes,
            "dlq_url": dlq_url,
            "backstop_url": backstop_url,
            "sqs": sqs,
            "dynamodb": dynamodb,
        }
    client.cache_clear()
    single_attempt_client.cache_clear()
    id_secret.cache_clear()


@pytest.fixture
def scheduler_env(aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`aws` plus the Scheduler group and role that schedules and far-future jobs use."""
    iam = boto3.client("iam")
    role = iam.create_role(RoleName=settings.SCHEDULER_ROLE_NAME, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    sqs = aws["sqs"]

    def arn(url: str) -> str:
        return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    environment.change(scheduler_role_arn=role, queue_arn=arn(aws["queue_url"]))
    client = boto3.client("scheduler")
    client.create_schedule_group(Name=settings.SCHEDULE_GROUP)
    return {**aws, "scheduler": client}


def _serialize_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """One moto request at a time. The worker writes a job's outcome on a thread while the next job
    claims; DynamoDB serializes two writes to one item, moto does not (it deep-copies an item while
    another thread updates it: "dictionary changed size during iteration")."""
    one_at_a_time = threading.RLock()
    process_request = BotocoreStubber.process_request

    def serialized(self: BotocoreStubber, request: Any) -> Any:
        with one_at_a_time:
            return process_request(self, request)

    monkeypatch.setattr(BotocoreStubber, "process_request", serialized)
