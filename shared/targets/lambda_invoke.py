"""`lambda` jobs: a synchronous invoke of one of the customer's Lambda functions.

Payload: {"function": <name, name:qualifier or full ARN>, "input"?: <JSON object>}. Only functions
the stack's allow-list names for the job's tenant may be targets (shared/targets/lambda_allowlist.py):
the API checks at enqueue (422 on `payload.function`), and the worker checks again before invoking
(the list may have changed since); a job its tenant may no longer send is dead, never invoked.
Corral's own functions are never targets.

The event the function gets is the job's `input` object with one key added by the platform,
written last so the input cannot set it:

    {...input, "corral": {"tenant": "acme", "job_id": "...", "attempt": 1}}

`corral.tenant` is the tenant whose API key enqueued the job (or whose schedule fired it): the
function must authorise on it, not on anything in the input, when several tenants may call it.
`input` is therefore an object (or left out, an empty one), and may not have a `corral` key of its
own (422 on `payload.input.corral`). A function that ignores unknown keys needs no change.

The response is the job's result. A function error, a throttle or any other failed call fails the
attempt and is retried like any failure; a function that is missing or that the worker may not
invoke is dead at once (no retry would fix it). The job's error names what went wrong in words of
its own, never AWS's message (which names the function's ARN, and so the account): the detail goes
to the job's log.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.aws import lambda_clients
from shared.aws.clients import aws_error_code, aws_error_message
from shared.jobs.registry import InvalidPayload, JobContext, JobDead, JobFailed, builtin_job_type
from shared.targets import lambda_allowlist

RESULT_MAX_BYTES = 64 * 1024  # a job's result is stored in its DynamoDB item (400 KB at most)
EVENT_FIELD = "corral"  # the platform's key in the invoke event: who called, for which job and attempt

# What the job's error says for each Lambda error code, and whether a retry could help.
_ERRORS: dict[str, tuple[str, bool]] = {
    "ResourceNotFoundException": ("the function or its qualifier does not exist", False),
    "AccessDeniedException": ("the worker may not invoke the function", False),
    "AccessDenied": ("the worker may not invoke the function", False),
    "InvalidRequestContentException": ("Lambda refused the input", False),
    "RequestTooLargeException": ("the input is over Lambda's invoke size limit", False),
    "TooManyRequestsException": ("the function was throttled", True),
    "ResourceConflictException": ("the function is being created or updated", True),
    "ResourceNotReadyException": ("the function is not ready", True),
}
_OTHER_ERROR = ("Lambda failed the invoke", True)
_NO_ANSWER = "invoke failed: no answer from Lambda"
_REFUSED = "not a Lambda target this stack allows for this tenant (CDK context corral:lambda_targets)"


def validate(payload: Any) -> None:
    """The payload's shape (the API, at enqueue); whether its tenant may send it is `check_tenant`."""
    if not isinstance(payload, dict):
        raise InvalidPayload("payload", 'must be an object: {"function": <name or ARN>, "input"?: {...}}')
    unknown = sorted(set(payload) - {"function", "input"})
    if unknown:
        raise InvalidPayload(f"payload.{unknown[0]}", "unknown field; a lambda job has function and input")
    function = payload.get("function")
    if not isinstance(function, str) or not lambda_allowlist.is_target(function):
        raise InvalidPayload(
            "payload.function", "must be a function name or full function ARN, with an optional :qualifier"
        )
    given = payload.get("input")
    if given is not None and not isinstance(given, dict):
        raise InvalidPayload("payload.input", f"must be an object (the function's event, with {EVENT_FIELD!r} added)")
    if isinstance(given, dict) and EVENT_FIELD in given:
        raise InvalidPayload(
            f"payload.input.{EVENT_FIELD}", "is set by corral (the calling tenant, the job and the attempt)"
        )


def check_tenant(payload: Any, tenant: str) -> None:
    """Whether `tenant`'s jobs may invoke the payload's function (after `validate`)."""
    function = payload["function"]
    if lambda_allowlist.is_own_function(function):
        raise InvalidPayload(
            "payload.function",
            "one of corral's own functions, which no job may invoke (no corral:lambda_targets entry can allow it)",
        )
    if not lambda_allowlist.is_allowed(function, tenant, lambda_allowlist.entries()):
        raise InvalidPayload("payload.function", _REFUSED)


def invoke_event(payload: dict[str, Any], context: JobContext) -> dict[str, Any]:
    """The function's event: the job's input with the platform's field written over it."""
    caller = {"tenant": context.tenant, "job_id": context.job_id, "attempt": context.attempt}
    return {**(payload.get("input") or {}), EVENT_FIELD: caller}


@builtin_job_type("lambda", timeout_seconds=60, validate=validate, check_tenant=check_tenant)
def invoke(payload: Any, context: JobContext) -> Any:
    try:  # the allow-list may have changed since the job was accepted
        validate(payload)
        check_tenant(payload, context.tenant)
    except InvalidPayload as refused:
        raise JobDead(f"not invoked: {refused}") from None
    function = payload["function"]
    try:
        response = lambda_clients.reading(context.seconds_left() + 1).invoke(
            FunctionName=function,
            InvocationType="RequestResponse",
            Payload=json.dumps(invoke_event(payload, context)).encode(),
        )
    except ClientError as error:
        code = aws_error_code(error)
        context.logger.warning(
            "lambda invoke failed", extra={"function": function, "code": code, "detail": aws_error_message(error)}
        )
        text, retry = _ERRORS.get(code, _OTHER_ERROR)
        raise (JobFailed if retry else JobDead)(f"invoke failed: {text}") from None
    except BotoCoreError as error:  # no connection, a read timeout: its text holds the invoke URL
        context.logger.warning("lambda invoke failed", extra={"function": function, "detail": str(error)})
        raise JobFailed(_NO_ANSWER) from None
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
