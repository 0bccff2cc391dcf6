"""Where the CLI points: the API (URL + key) and, for operator commands, AWS.

API: --api-url/--api-key, else CORRAL_API_URL/CORRAL_API_KEY, else the local stack's
.corral/endpoint.json (written by `make up`; found from the current directory upwards, or at
CORRAL_ENDPOINT_FILE).

AWS (operator commands): an emulator when AWS_ENDPOINT_URL is set, or when no CORRAL_API_URL is set
and endpoint.json names one; its clients are built with localstack-client. Otherwise AWS itself,
with boto3's usual credential chain.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from shared import environment
from shared.aws import clients
from shared.environment import FunctionEnv

ENDPOINT_FILE_ENV = "CORRAL_ENDPOINT_FILE"


class TargetError(Exception):
    """The CLI does not know where to send a request."""


def endpoint_file() -> Path | None:
    if os.environ.get(ENDPOINT_FILE_ENV):
        path = Path(os.environ[ENDPOINT_FILE_ENV])
        return path if path.is_file() else None
    for folder in (Path.cwd(), *Path.cwd().parents):
        candidate = folder / ".corral" / "endpoint.json"
        if candidate.is_file():
            return candidate
    return None


def _local_stack() -> dict[str, Any]:
    path = endpoint_file()
    if path is None:
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise TargetError(f"cannot read {path}: {error}") from error


@dataclass(frozen=True)
class Api:
    url: str
    key: str
    source: str


def api(url: str | None = None, key: str | None = None) -> Api:
    url = url or os.environ.get("CORRAL_API_URL")
    key = key or os.environ.get("CORRAL_API_KEY")
    source = "environment"
    if not (url and key):
        local = _local_stack()
        url, key, source = url or local.get("api_url"), key or local.get("api_key"), str(endpoint_file())
    if not (url and key):
        raise TargetError(
            "no API to talk to: set CORRAL_API_URL and CORRAL_API_KEY (or --api-url/--api-key), "
            "or start the local stack with `make up` (it writes .corral/endpoint.json)"
        )
    return Api(url=url.rstrip("/"), key=key, source=source)


@dataclass(frozen=True)
class Aws:
    where: str  # "AWS" or the emulator's endpoint
    endpoint: str | None


def aws_target() -> Aws:
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint and not os.environ.get("CORRAL_API_URL"):
        endpoint = _local_stack().get("aws_endpoint")
    return Aws(where=endpoint or "AWS", endpoint=endpoint)


def use_aws(target: Aws, *, queues: bool = False) -> None:
    """Point every AWS client of this process at the target, and name the stack's table (and, with
    `queues`, its queues) in the environment the domain code reads, as the functions' environment does."""

    if target.endpoint:
        from localstack_client.session import Session

        parts = urlsplit(target.endpoint)
        session = Session(
            aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
            aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
            region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
            localstack_host=parts.netloc,
        )
        # localstack-client prefers AWS_ENDPOINT_URL from the environment; it is the same endpoint here.
        clients.use_client_factory(lambda service, config: session.client(service, config=config))
    else:
        clients.use_client_factory(lambda service, config: boto3.session.Session().client(service, config=config))
    if not queues:
        return
    found = environment.current()
    sqs = clients.client("sqs")
    environment.use(
        found.but(
            queue_url=found.queue_url or sqs.get_queue_url(QueueName=found.names.queue)["QueueUrl"],
            dlq_url=found.dlq_url or sqs.get_queue_url(QueueName=found.names.dlq)["QueueUrl"],
        )
    )


def api_key_cache_seconds() -> int:
    """The deployed API's key cache (the revocation bound), from its function's environment."""
    from shared import settings

    try:
        api_function = environment.current().names.api_function
        configuration = clients.client("lambda").get_function_configuration(FunctionName=api_function)
        deployed = configuration["Environment"]["Variables"]
        return int(FunctionEnv.from_environment(deployed).api_key_cache_seconds)
    except (BotoCoreError, ClientError, KeyError, ValueError):  # not deployed as expected: the documented value
        return settings.API_KEY_CACHE_SECONDS
