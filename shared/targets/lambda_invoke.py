"""`lambda` jobs: a synchronous invoke of one of the customer's Lambda functions.

Payload: {"function": <name, name:qualifier or ARN>, "input"?: any JSON}. The response is the
job's result. A function error, a throttle or any other failed call fails the attempt and is
retried like any failure; a function that is missing or not allowed is dead at once (no retry
would fix it). Only functions the stack allows may be targets (shared/targets/lambda_allowlist.py).
"""

from __future__ import annotations

import json
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from shared.aws.clients import aws_error_code, aws_error_message
from shared.jobs.registry import InvalidPayload, JobContext, JobDead, JobFailed, builtin_job_type
from shared.targets import lambda_allowlist

RESULT_MAX_BYTES = 64 * 1024  # a job's result is stored in its DynamoDB item (400 KB at most)
# Errors no retry can fix: the function is missing, or this worker may not call it, or the input is refused.
_PERMANENT = {
    "ResourceNotFoundException",
    "AccessDeniedException",
    "AccessDenied",
    "InvalidRequestContentException",
    "RequestTooLargeException",
}


def validate(payload: Any) -> None:
    if not isinstance(payload, dict):
        raise InvalidPayload("payload", 'must be an object: {"function": <name or ARN>, "input"?: any}')
    unknown = sorted(set(payload) - {"function", "input"})
    if unknown:
        raise InvalidPayload(f"payload.{unknown[0]}", "unknown field; a lambda job has function and input")
    function = payload.get("function")
    if not isinstance(function, str) or not function or len(function) > 170:
        raise InvalidPayload("payload.function", "must be a function name or ARN")
    if not lambda_allowlist.is_allowed(function, lambda_allowlist.allowed_patterns()):
        raise InvalidPayload(
            "payload.function",
            f"{function!r} is not a Lambda target this stack allows (CDK context corral:lambda_targets)",
        )


def _client(seconds: float) -> Any:
    # No SDK retries: a failed invoke is a failed attempt, retried by the job's own policy.
    config = Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=5, read_timeout=max(1, seconds))
    return boto3.session.Session().client("lambda", config=config)


@builtin_job_type("lambda", timeout_seconds=60, validate=validate)
def invoke(payload: Any, context: JobContext) -> Any:
    validate(payload)  # the allowlist may have shrunk since the job was accepted
    try:
        response = _client(context.seconds_left() + 1).invoke(
            FunctionName=payload["function"],
            InvocationType="RequestResponse",
            Payload=json.dumps(payload.get("input")).encode(),
        )
    except ClientError as error:
        code = aws_error_code(error)
        message = f"invoke failed: {code}: {aws_error_message(error)}"
        raise (JobDead(message) if code in _PERMANENT else JobFailed(message)) from None
    except BotoCoreError as error:
        raise JobFailed(f"invoke failed: {error}") from None
    body = response["Payload"].read()
    if response.get("FunctionError"):
        detail = _parse(body)
        if isinstance(detail, dict):
            detail = f"{detail.get('errorType', 'Error')}: {detail.get('errorMessage', '')}"
        raise JobFailed(f"function error ({response['FunctionError']}): {str(detail)[:1000]}")
    if len(body) > RESULT_MAX_BYTES:
        return {"truncated": True, "text": body[:RESULT_MAX_BYTES].decode(errors="replace")}
    return _parse(body)


def _parse(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return body.decode(errors="replace")
