"""The platform the end-to-end tests drive: the embedded stack started for the session, or a deployed API.

Set CORRAL_API_URL and CORRAL_API_KEY (and AWS credentials/endpoint for the queue
checks) to run the same tests against LocalStack or AWS: `make smoke`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from client import Corral
from local.chaos import Chaos
from local.deploy import deploy
from local.ministack import STATE, Ministack
from local.prewarm import Warmed
from local.sidecars import Sidecars
from shared import settings

TEST_PORT = int(os.environ.get("CORRAL_TEST_PORT", "4599"))  # apart from `make up`'s 4566
# The one Lambda function `lambda` jobs may invoke on the test stack; tests/e2e creates it.
LAMBDA_TARGET = "corral-e2e-target"


@dataclass(frozen=True)
class Platform:
    api_url: str
    api_key: str
    aws_env: dict[str, str]
    emulated: bool
    chaos: Chaos | None = None  # fault injection; only on the embedded stack
    warmed: tuple[Warmed, ...] = ()  # environments the embedded stack started after deploy (local/prewarm.py)

    def client(self, api_key: str | None = None) -> Corral:
        return Corral(self.api_url, api_key or self.api_key)

    def require_aws(self) -> None:
        """Queue and table checks need AWS access: the emulator's, or credentials for a deployed stack."""
        if not self.emulated and boto3.Session().get_credentials() is None:
            pytest.skip("needs AWS credentials for the deployed stack's queue/table (docs/deploy.md, make smoke)")

    def aws(self, service: str) -> Any:
        self.require_aws()
        return boto3.client(
            service,
            endpoint_url=self.aws_env.get("AWS_ENDPOINT_URL"),
            region_name=self.aws_env.get("AWS_DEFAULT_REGION"),
            aws_access_key_id=self.aws_env.get("AWS_ACCESS_KEY_ID"),
            aws_secret_access_key=self.aws_env.get("AWS_SECRET_ACCESS_KEY"),
        )

    def queue_url(self, name: str = settings.QUEUE_NAME) -> str:
        return self.aws("sqs").get_queue_url(QueueName=name)["QueueUrl"]


@contextmanager
def platform() -> Iterator[Platform]:
    if os.environ.get("CORRAL_API_URL"):
        aws_env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        yield Platform(os.environ["CORRAL_API_URL"], os.environ["CORRAL_API_KEY"], aws_env, emulated=False)
        return
    state_dir = STATE / "test"
    emulator = Ministack(port=TEST_PORT, log_path=state_dir / "ministack.log")
    sidecars = Sidecars(emulator.endpoint, state_dir=state_dir)
    emulator.start()
    try:
        sidecars.start()
        endpoint = deploy(
            emulator.env(),
            function_env=sidecars.function_env(),
            state_dir=state_dir,
            lambda_targets=[LAMBDA_TARGET],
        )
        chaos = Chaos(sidecars.proxy_url, sidecars.cache_url, emulator.endpoint)
        yield Platform(
            endpoint.api_url,
            endpoint.api_key,
            emulator.env(),
            emulated=True,
            chaos=chaos,
            warmed=tuple(endpoint.warmed),
        )
    finally:
        sidecars.stop()
        emulator.stop()
