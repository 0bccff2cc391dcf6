"""Lambda clients for synchronous invokes that last as long as a job: kept for the process's life.

Used by `lambda` jobs (shared/targets/lambda_invoke.py) and by the worker's invoke of the jobs
function (shared/worker/run/fence.py). Made per invoke, a client cost ~40-100 ms of the worker's CPU per
job, 6.15x the CPU of a job run in-process against 1.23x with a kept client
(docs/decisions/customer-code-fence.md).

One client per power-of-two read timeout: the read timeout must cover the job's time left (an
invoke waits for the whole job), and one long read timeout for every job would leave a timed-out
job's call waiting the longest timeout. No SDK retries: a failed invoke is a failed attempt,
retried by the job's own policy.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import boto3
from botocore.config import Config

CONNECT_TIMEOUT_SECONDS = 5


def reading(seconds: float) -> Any:
    """A kept client whose read timeout covers `seconds`, at most twice over."""
    return _client_reading(2 ** math.ceil(math.log2(max(1.0, seconds))))


@functools.lru_cache(maxsize=16)
def _client_reading(read_timeout: int) -> Any:
    config = Config(
        retries={"mode": "standard", "max_attempts": 1},
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=read_timeout,
    )
    return boto3.session.Session().client("lambda", config=config)
