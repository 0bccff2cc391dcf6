"""boto3 clients, created once per process, with botocore's standard retry mode.

Endpoints come from the environment (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, ...),
so the same code talks to AWS, LocalStack or the embedded emulator.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import boto3
from botocore.config import Config

# Standard mode retries throttling and 5xx with jittered backoff; short timeouts keep
# an enqueue fast when one connection is slow, at the price of a retry.
_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 4},
    connect_timeout=2,
    read_timeout=5,
    max_pool_connections=50,
)


_factory: Callable[[str, Config], Any] | None = None


def use_client_factory(factory: Callable[[str, Config], Any] | None) -> None:
    """Build clients with `factory(service, config)` from now on (the operator CLI pointed at an
    emulator builds them with localstack-client); None restores the default."""
    global _factory
    _factory = factory
    client.cache_clear()


@cache
def client(service: str, endpoint_url: str | None = None) -> Any:
    """`endpoint_url` overrides the environment's (e.g. the local status cache in front of DynamoDB)."""
    if _factory is not None and endpoint_url is None:
        return _factory(service, _CONFIG)
    return boto3.session.Session().client(service, config=_CONFIG, endpoint_url=endpoint_url)
