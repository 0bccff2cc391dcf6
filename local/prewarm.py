"""Start the execution environments the first jobs will need, right after deploy, off the jobs' path.

Without this the emulator cold-starts them all at once when the first jobs arrive: the worker
mapping leases up to MaximumConcurrency environments for the first batches, each unpacks ~60 MB
and imports the handler, and on 2 cores 8 such starts together took 20 s (a newcomer's first
20 echo jobs after `make up`: enqueue-to-start p90 20.5 s). So deploy invokes each function N
times at once, N = the worker mapping's MaximumConcurrency (half as many API environments: an
enqueue takes a few ms, a job batch longer), and the emulator keeps them warm
(local/ministack.py's WARM_TTL_SECONDS).

On AWS the same role is played by provisioned concurrency on the functions (and provisioned
pollers on the mapping, docs/decisions/local-stack.md "Pre-warm"): environments initialised before traffic, kept warm.
Without it AWS also cold-starts, but each environment on its own machine, ~1 s each, not 8
sharing 2 cores.

The worker is warmed with an empty batch, which Powertools rejects (an error the handler raises
itself): a handler's error keeps its environment on AWS and on the corrected emulator
(local/ministack_patch.py). The API is warmed with a request for an unrouted path: a 404 that
reads no store. The jobs function, when the stack has one (a customer's job package deployed), is
warmed with an empty request, which it answers as a failed job without running anything: a quarter
as many environments as the worker's, since only customer types' jobs reach it (the emulator lets an
invoke that finds them busy wait up to 1 s for one before it starts another).
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from local.ministack import worker_pids
from shared import settings

WARM_WORKER_EVENT: dict[str, Any] = {"Records": []}
WARM_JOBS_FUNCTION_EVENT: dict[str, Any] = {}  # no job: answered as a failure, nothing run
WARM_API_EVENT: dict[str, Any] = {
    "version": "2.0",
    "routeKey": "$default",
    "rawPath": "/_warm",
    "rawQueryString": "",
    "headers": {},
    "requestContext": {
        "http": {"method": "GET", "path": "/_warm", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
        "requestId": "warm",
        "routeKey": "$default",
        "stage": "$default",
        "timeEpoch": 0,
    },
    "isBase64Encoded": False,
}


@dataclass(frozen=True)
class Warmed:
    function: str
    wanted: int
    running: int  # the function's Lambda processes under this emulator afterwards
    seconds: float


def _lambda(aws_env: dict[str, str]) -> Any:
    return boto3.client(
        "lambda",
        endpoint_url=aws_env["AWS_ENDPOINT_URL"],
        region_name=aws_env["AWS_DEFAULT_REGION"],
        aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"],
        config=Config(read_timeout=120, retries={"max_attempts": 1}, max_pool_connections=64),
    )


def jobs_queue_mapping(lambda_: Any) -> dict[str, Any]:
    """The worker's event source mapping of the jobs queue (the worker also drains the backstop, with a
    mapping of its own whose concurrency is fixed at 2)."""
    mappings = lambda_.list_event_source_mappings(FunctionName=settings.WORKER_FUNCTION)["EventSourceMappings"]
    return next((m for m in mappings if m["EventSourceArn"].endswith(f":{settings.QUEUE_NAME}")), {})


def worker_concurrency(aws_env: dict[str, str]) -> int:
    """The jobs queue mapping's MaximumConcurrency: how many environments its first batches can lease at once."""
    scaling = jobs_queue_mapping(_lambda(aws_env)).get("ScalingConfig") or {}
    return int(scaling.get("MaximumConcurrency") or settings.WORKER_MAX_CONCURRENCY)


def warm(aws_env: dict[str, str], function: str, event: dict[str, Any], count: int) -> Warmed:
    """Invoke `function` `count` times at once, so the emulator starts `count` environments side by side."""
    client = _lambda(aws_env)
    payload = json.dumps(event).encode()
    together = threading.Barrier(count)

    def invoke(_: int) -> None:
        together.wait(timeout=30)
        client.invoke(FunctionName=function, Payload=payload)  # an error answer still leaves a warm environment

    started = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        list(pool.map(invoke, range(count)))
    running = len(worker_pids(aws_env["AWS_ENDPOINT_URL"], function))
    return Warmed(function, count, running, round(time.monotonic() - started, 1))


def deployed(aws_env: dict[str, str], function: str) -> bool:
    try:
        _lambda(aws_env).get_function(FunctionName=function)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return False
        raise
    return True


def prewarm(aws_env: dict[str, str], workers: int | None = None, apis: int | None = None) -> list[Warmed]:
    """Warm N worker and N/2 API environments (N: the worker mapping's MaximumConcurrency), and N/4 of the
    jobs function's if it is deployed, one function at a time.

    Up to two more rounds top up a function whose environments did not all start (an init that ran
    out of time on a crowded machine): each invokes N at once again, so the warm ones are reused
    and the missing ones start (best effort: a warm one that finishes first may serve two; and on
    the corrected emulator an invoke finding every warm one busy waits up to 1 s for a release
    before starting another, local/ministack_patch.py, so a top-up mostly reuses warm ones).
    """
    workers = workers or worker_concurrency(aws_env)
    apis = apis or max(1, workers // 2)
    warmed = []
    functions = [(settings.WORKER_FUNCTION, WARM_WORKER_EVENT, workers), (settings.API_FUNCTION, WARM_API_EVENT, apis)]
    if deployed(aws_env, settings.JOBS_FUNCTION):
        functions.append((settings.JOBS_FUNCTION, WARM_JOBS_FUNCTION_EVENT, max(1, workers // 4)))
    for function, event, count in functions:
        result = warm(aws_env, function, event, count)
        for _ in range(2):
            if result.running >= count:
                break
            again = warm(aws_env, function, event, count)
            result = Warmed(function, count, again.running, round(result.seconds + again.seconds, 1))
        warmed.append(result)
    return warmed
