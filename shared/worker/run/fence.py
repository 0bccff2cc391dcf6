"""The worker's side of the fence: a customer's job runs in the jobs function, invoked synchronously.

The worker claims the job, invokes the jobs function (FunctionEnv.jobs_function) with the one job
(shared/execution/fenced_job.py `Request`), and records the answer as it records a job it ran itself:
the claim, the outcome write, the tenants' signing secrets and the job-id key never leave the
worker (docs/decisions/customer-code-fence.md). The executor waits for the invoke within the job's
timeout (shared/execution/time_limit.py), as for any job.

The client is kept for the process's life, one per power-of-two read timeout covering the job's
time left (shared/aws/lambda_clients.py): built per invoke it cost 6.15x the CPU of a job run
in-process, kept 1.23x.

What reaches the job's record when the function does not answer a job's outcome: a failed attempt,
retried by the job's policy, never `dead` (nothing about the job makes it unfixable):
- the invoke fails (throttled, the function missing or being updated, access denied): the error
  code, never AWS's message, which names the function's ARN and so the account;
- no answer (connection, read timeout);
- a `FunctionError`: the function itself failed (its process crashed, ran out of memory or time, or
  the package failed to import), not the job: a job's failure is an answer;
- an answer the worker cannot read.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import environment, settings
from shared.aws import lambda_clients
from shared.aws.clients import aws_error_code, aws_error_message
from shared.execution.fenced_job import Answer, Request
from shared.jobs.registry import JobContext

FUNCTION_ERROR_MAX_CHARS = 1000  # of the function's own error, in the job's


def prepare_client() -> None:
    """Build the kept client a job of the default timeout uses, in the worker's init phase rather than on
    the first customer job's clock (the first build loads Lambda's service model); nothing without a
    jobs function."""
    env = environment.current()
    if env.jobs_function:
        lambda_clients.reading(min(settings.DEFAULT_JOB_TIMEOUT_SECONDS, env.job_timeout_ceiling) + 1)


def run(job_type: str, payload: Any, context: JobContext, steps: list[dict[str, Any]] | None = None) -> Answer:
    """Run one job of a customer's type in the jobs function, and answer what it did. `steps`: the job's
    recorded steps, where the worker records them (shared/worker/run/recorded_run.py); None: none sent."""
    function = environment.current().jobs_function
    if not function:
        return _failed(f"job type {job_type!r} runs in the jobs function, which this stack does not deploy")
    request = replace(Request.of(job_type, payload, context), steps=steps)
    try:
        # The read timeout covers the job's time left and a second more, so the invoke is cut by the
        # job's timeout (the executor's), not by the client.
        response = lambda_clients.reading(request.seconds_left + 1).invoke(
            FunctionName=function,
            InvocationType="RequestResponse",
            Payload=json.dumps(request.to_dict()).encode(),
        )
    except ClientError as error:
        code = aws_error_code(error) or "unknown error"
        context.logger.warning("jobs function invoke failed", extra={"code": code, "detail": aws_error_message(error)})
        return _failed(f"the jobs function could not be invoked ({code})")
    except BotoCoreError as error:  # no connection, a read timeout: its text holds the invoke URL
        context.logger.warning("jobs function invoke failed", extra={"detail": str(error)})
        return _failed("no answer from the jobs function")
    body = response["Payload"].read()
    if response.get("FunctionError"):
        return _failed(f"the jobs function failed ({response['FunctionError']}): {_function_error(body)}")
    try:
        return Answer.from_dict(json.loads(body))
    except ValueError as error:  # json's errors are ValueErrors too
        context.logger.warning("jobs function answer unreadable", extra={"detail": str(error), "bytes": len(body)})
        return _failed("the jobs function's answer is not one the worker reads")


def _failed(reason: str) -> Answer:
    return Answer(failure=f"JobFailed: {reason}")


def _function_error(body: bytes) -> str:
    """Lambda's error document, `{"errorType", "errorMessage", ...}`, as one line of the job's error."""
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if isinstance(document, dict):
        text = f"{document.get('errorType', 'Error')}: {document.get('errorMessage', '')}"
    else:
        text = body.decode(errors="replace")
    return text[:FUNCTION_ERROR_MAX_CHARS]
