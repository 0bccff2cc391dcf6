"""boto3 clients, created once per process, with botocore's standard retry mode.

Endpoints come from the environment (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, ...),
so the same code talks to AWS, LocalStack or the embedded emulator.

A caller with a hard time limit (the API: API Gateway waits for the function's timeout at
most) sets a `deadline`: an attempt, first or retry, starts only if its worst case (connect
timeout + read timeout) ends before it, so no call is still in flight, maybe succeeding,
when the caller has to answer. See docs/decisions/input-limits.md "Every AWS call ends before the API answers".
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError


@dataclass(frozen=True)
class Timeouts:
    connect: float = 2
    read: float = 5

    @property
    def attempt_worst(self) -> float:
        return self.connect + self.read


_timeouts = Timeouts()
_deadline: float | None = None  # time.monotonic() by which every AWS call must have ended


def use_timeouts(timeouts: Timeouts) -> None:
    """This process's timeouts per attempt (before its first client; clients made earlier are dropped)."""
    global _timeouts
    _timeouts = timeouts
    client.cache_clear()
    single_attempt_client.cache_clear()


def _config(*, retry: bool = True) -> Config:
    # Standard mode retries throttling and 5xx with jittered backoff; short timeouts keep
    # an enqueue fast when one connection is slow, at the price of a retry.
    return Config(
        retries={"mode": "standard", "max_attempts": 4} if retry else {"mode": "standard", "total_max_attempts": 1},
        connect_timeout=_timeouts.connect,
        read_timeout=_timeouts.read,
        max_pool_connections=50,
    )


class DeadlineExceeded(BotoCoreError):
    fmt = "not enough time left for another AWS call attempt ({operation})"


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Within the block, refuse any AWS call attempt that might still run `seconds` from now."""
    global _deadline
    _deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _deadline = None


def _refuse_late_attempt(event_name: str, **_: Any) -> None:
    if _deadline is not None and time.monotonic() + _timeouts.attempt_worst > _deadline:
        raise DeadlineExceeded(operation=event_name.rsplit(".", 1)[-1])


_factory: Callable[[str, Config], Any] | None = None


def use_client_factory(factory: Callable[[str, Config], Any] | None) -> None:
    """Build clients with `factory(service, config)` from now on (the operator CLI pointed at an
    emulator builds them with localstack-client); None restores the default."""
    global _factory
    _factory = factory
    client.cache_clear()
    single_attempt_client.cache_clear()


_making = threading.Lock()  # a boto3 session is not thread-safe: clients are made from it one at a time


@lru_cache(maxsize=4)
def _session(_aws_environment: tuple[tuple[str, str], ...]) -> boto3.session.Session:
    """One session for the clients made under the same AWS_* environment (credentials, region, endpoints).

    A session loads the endpoint rules and partitions once, and each service's model once: measured here, a
    process's fifth client took 3-17 ms from a shared session against 70-200 ms from a fresh one, and a
    second client of a service (the single-attempt one) 4 ms against 75. A changed environment (a test,
    a tool pointed at another endpoint) gets a session of its own."""
    return boto3.session.Session()


def _made(service: str, config: Config, endpoint_url: str | None) -> Any:
    aws_environment = tuple(sorted((name, value) for name, value in os.environ.items() if name.startswith("AWS_")))
    with _making:
        return _session(aws_environment).client(service, config=config, endpoint_url=endpoint_url)


@cache
def client(service: str, endpoint_url: str | None = None) -> Any:
    """`endpoint_url` overrides the environment's (e.g. the local status cache in front of DynamoDB)."""
    if _factory is not None and endpoint_url is None:
        made = _factory(service, _config())
    else:
        made = _made(service, _config(), endpoint_url)
    made.meta.events.register("before-send", _refuse_late_attempt)
    return made


@cache
def single_attempt_client(service: str, endpoint_url: str | None = None) -> Any:
    """A client that makes one attempt per call, no retries: for a call with a cheaper fallback than
    waiting out botocore's backoff (4 retries, seconds of backoff), e.g. the claim of a job that may
    run without it while the store fails (shared/worker/admit/unclaimed.py)."""
    made = _made(service, _config(retry=False), endpoint_url)
    made.meta.events.register("before-send", _refuse_late_attempt)
    return made


def _error_field(error: Exception, name: str) -> str:
    response = getattr(error, "response", None)
    return str(response.get("Error", {}).get(name, "")) if isinstance(response, dict) else ""


def aws_error_code(error: Exception) -> str:
    """The AWS error code of a failed call ("ConditionalCheckFailedException", ...); "" if it has none."""
    return _error_field(error, "Code")


def aws_error_message(error: Exception) -> str:
    """The message AWS gave with a failed call's error code; "" if it has none."""
    return _error_field(error, "Message")


def is_condition_failure(error: Exception) -> bool:
    """Whether a DynamoDB write failed its ConditionExpression (and so changed nothing)."""
    return aws_error_code(error) == "ConditionalCheckFailedException"


def is_not_found(error: Exception) -> bool:
    """Whether the call named a resource that does not exist (a schedule, a function, ...)."""
    return aws_error_code(error) == "ResourceNotFoundException"
