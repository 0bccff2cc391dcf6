"""Conditional writes of the non-job items: a write whose condition fails answers False, and changes nothing.

Job records have their own (shared/store/jobs/job_store.py): they go through the status cache and explain
a failed condition with the record as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from shared.aws import clients
from shared.aws.clients import aws_error_code, aws_error_message


def conditional_put(**params: Any) -> bool:
    """PutItem with a ConditionExpression; False if the condition failed."""
    try:
        clients.client("dynamodb").put_item(**params)
    except ClientError as error:
        if clients.is_condition_failure(error):
            return False
        raise
    return True


def conditional_update(dynamodb: Any, **params: Any) -> bool:
    """UpdateItem with a ConditionExpression through `dynamodb` (a caller's client: one making a single
    attempt, say); False if the condition failed."""
    try:
        dynamodb.update_item(**params)
    except ClientError as error:
        if clients.is_condition_failure(error):
            return False
        raise
    return True


def conditional_delete(**params: Any) -> dict[str, Any] | None:
    """DeleteItem with a ConditionExpression, returning the deleted item (ReturnValues ALL_OLD); None if
    the condition failed."""
    try:
        answer = clients.client("dynamodb").delete_item(ReturnValues="ALL_OLD", **params)
    except ClientError as error:
        if clients.is_condition_failure(error):
            return None
        raise
    return dict(answer.get("Attributes", {}))


def failed_conditions(error: ClientError, actions: int) -> list[bool] | None:
    """For a cancelled transaction of `actions` actions, which of them failed their condition; None if `error` is
    not a cancelled transaction (it failed otherwise, and is re-raised by the caller)."""
    if aws_error_code(error) != "TransactionCanceledException":
        return None
    reasons = error.response.get("CancellationReasons") or []
    failed = [reason.get("Code") == "ConditionalCheckFailed" for reason in reasons]
    if len(failed) != actions:
        # No reasons given (some stores): the message lists them, "[ConditionalCheckFailed, None]".
        message = aws_error_message(error)
        listed = message[message.find("[") + 1 : message.rfind("]")].split(",")
        failed = [part.strip() == "ConditionalCheckFailed" for part in listed]
    return (failed + [False] * actions)[:actions]


@dataclass(frozen=True)
class Refused:
    """A conditional write's condition failed: `item` is the item as it was ({} if there was none)."""

    item: dict[str, Any]


def update_or_refused(dynamodb: Any, **params: Any) -> dict[str, Any] | Refused:
    """UpdateItem with a ConditionExpression through `dynamodb`: the attributes its ReturnValues asked for,
    or Refused with the item as it was (ReturnValuesOnConditionCheckFailure=ALL_OLD: no read)."""
    try:
        answer = dynamodb.update_item(ReturnValuesOnConditionCheckFailure="ALL_OLD", **params)
    except ClientError as error:
        if clients.is_condition_failure(error):
            return Refused(dict(error.response.get("Item") or {}))
        raise
    return dict(answer.get("Attributes", {}))
