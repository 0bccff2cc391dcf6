"""boto3 clients, created once per process, with botocore's standard retry mode.

Endpoints come from the environment (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, ...),
so the same code talks to AWS, LocalStack or the embedded emulator.
"""

from __future__ import annotations

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


@cache
def client(service: str, endpoint_url: str | None = None) -> Any:
    """`endpoint_url` overrides the environment's (e.g. the local status cache in front of DynamoDB)."""
    return boto3.session.Session().client(service, config=_CONFIG, endpoint_url=endpoint_url)


def aws_error_code(error: Exception) -> str:
    """The AWS error code of a failed call ("ConditionalCheckFailedException", ...); "" if it has none."""
    response = getattr(error, "response", None)
    return str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""
