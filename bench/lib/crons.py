"""The herd's crons: at() schedules all due at one second, created through the product's own adapter.

Each schedule is made by `shared.aws.eventbridge.create` with the Input `JobMessage.firing_template`
writes, exactly as a customer's schedule is (shared/schedules/), so a firing is the message a
customer's firing would be.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from local.deploy import DEMO_TENANT, function_environment
from local.platform import Platform
from shared import settings
from shared.aws import eventbridge
from shared.environment import FunctionEnv
from shared.model.message import JobMessage
from shared.model.spec import JobSpec


def create_herd(platform: Platform, prefix: str, count: int, due: datetime, threads: int) -> float:
    """Create `count` at() schedules due at `due`; returns schedules created per second."""
    sqs = platform.aws("sqs")

    def arn(name: str) -> str:
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    # What the API function's environment names: the schedules' target, its role, their dead-letter target.
    targets = FunctionEnv(
        queue_arn=arn(settings.QUEUE_NAME),
        backstop_arn=arn(settings.BACKSTOP_NAME),
        scheduler_role_arn=platform.aws("iam").get_role(RoleName=settings.SCHEDULER_ROLE_NAME)["Role"]["Arn"],
    )

    def create(index: int) -> None:
        name = f"{prefix}-{index:05d}"
        job = JobMessage.firing_template(DEMO_TENANT, name, JobSpec("echo", {"herd": index}, max_attempts=3))
        eventbridge.create(name, eventbridge.at_expression(due), job)

    with function_environment(platform.aws_env, targets):
        started = time.monotonic()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(create, range(count)))
        return count / (time.monotonic() - started)


def herd_records(platform: Platform, prefix: str) -> list[dict[str, Any]]:
    """Every job record a herd firing became."""
    dynamodb = platform.aws("dynamodb")
    records: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=settings.TABLE_NAME,
        FilterExpression="begins_with(schedule_name, :prefix)",
        ExpressionAttributeValues={":prefix": {"S": prefix}},
    ):
        records += page["Items"]
    return records
