"""The platform the end-to-end tests drive: the embedded stack started for the session, or a deployed API.

Set CORRAL_API_URL and CORRAL_API_KEY (and AWS credentials/endpoint for the queue
checks) to run the same tests against LocalStack or AWS: `make smoke`.
"""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Iterator

import pytest

from local.chaos import Chaos
from local.deploy import DEMO_TENANT, create_api_key
from local.ministack import STATE
from local.platform import NO_AWS_ACCESS, Platform, embedded_stack
from shared import settings

TEST_PORT = int(os.environ.get("CORRAL_TEST_PORT", "4599"))  # apart from `make up`'s 4566
# The one Lambda function `lambda` jobs may invoke on the test stack, for the demo tenant (the `api`
# fixture's) only; test_customer_work.py creates it. Not named `corral-...`: those are the stack's own.
LAMBDA_TARGET = "e2e-lambda-target"
# The test stack's jobs queue lets a message be received this often (the profile's 100 lowered), so
# test_waiting.py waits past the budget in a couple of minutes.
TEST_RECEIVE_BUDGET = 10


class SuitePlatform(Platform):
    """The platform as the suite drives it: a check needing AWS access the run lacks is skipped."""

    def require_aws(self) -> None:
        if not self.has_aws_access:
            pytest.skip(NO_AWS_ACCESS)


def _for_the_suite(platform: Platform) -> SuitePlatform:
    return SuitePlatform(**{field.name: getattr(platform, field.name) for field in dataclasses.fields(platform)})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def deployed() -> Iterator[Platform]:
    """The stack, deployed once per test session: the embedded one (local/platform.py), or the API
    CORRAL_API_URL names."""
    if os.environ.get("CORRAL_API_URL"):
        aws_env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        yield SuitePlatform(os.environ["CORRAL_API_URL"], os.environ["CORRAL_API_KEY"], aws_env, emulated=False)
        return
    with embedded_stack(
        TEST_PORT,
        STATE / "test",
        lambda_targets=[f"{LAMBDA_TARGET}={DEMO_TENANT}"],
        receive_budget=TEST_RECEIVE_BUDGET,
    ) as stack:
        yield _for_the_suite(stack.platform)


@pytest.fixture(scope="session")
def api(deployed: Platform):
    return deployed.client()


@pytest.fixture(scope="session")
def other_tenant_api(deployed: Platform):
    deployed.require_aws()  # a second tenant's key is written straight into the table
    return deployed.client(create_api_key(deployed.aws_env, "other-tenant", label="tests"))


@pytest.fixture(scope="session")
def lambda_target_name() -> str:
    """The function the test stack allows the demo tenant's `lambda` jobs to invoke (corral:lambda_targets)."""
    return LAMBDA_TARGET


@pytest.fixture(scope="session")
def chaos(deployed: Platform) -> Chaos:
    """Faults and store-request counts: only the embedded stack has the sidecars that make them."""
    if deployed.chaos is None:
        pytest.skip("faults are injected, and store requests counted, only on the embedded stack")
    return deployed.chaos


@pytest.fixture(scope="session")
def job_id_secret(deployed, api) -> bytes:
    """The deployment's job-id signing secret, read from its table, for tests that put messages straight
    on the queue: the worker runs only messages whose id verifies, so they mint ids as the API does."""
    dynamodb = deployed.aws("dynamodb")
    key = {"pk": {"S": "config#job-id-signing-key"}}  # shared/store/id_secret.py
    item = dynamodb.get_item(TableName=settings.TABLE_NAME, Key=key, ConsistentRead=True).get("Item")
    if item is None:  # no function has needed it yet: an enqueue creates it
        api.enqueue("echo")
        item = dynamodb.get_item(TableName=settings.TABLE_NAME, Key=key, ConsistentRead=True)["Item"]
    return base64.b64decode(item["secret"]["S"])
