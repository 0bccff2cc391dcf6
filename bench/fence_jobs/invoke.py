"""`fence-invoke`: a synchronous invoke of the benchmark's target function, with one client per environment."""

from __future__ import annotations

import functools
import json
from typing import Any

import boto3
from botocore.config import Config

from corral_jobs import JobContext, JobFailed, job_type

TARGET = "fence-echo"  # bench/scenarios/fence.py creates it in the emulator


@functools.cache
def _client() -> Any:
    # As shared/targets/lambda_invoke.py's, but built once: no SDK retries, the job's timeout bounds the wait.
    config = Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=5, read_timeout=60)
    return boto3.session.Session().client("lambda", config=config)


@job_type("fence-invoke")
def invoke(payload: Any, context: JobContext) -> Any:
    caller = {"tenant": context.tenant, "job_id": context.job_id, "attempt": context.attempt}
    event = {**(payload if isinstance(payload, dict) else {}), "corral": caller}
    response = _client().invoke(FunctionName=TARGET, InvocationType="RequestResponse", Payload=json.dumps(event))
    body = response["Payload"].read()
    if response.get("FunctionError"):
        raise JobFailed(f"function error ({response['FunctionError']}): {body[:1000]!r}")
    return json.loads(body) if body else None
