"""Tokens a durable job waits on for a person (shared/durable/tokens.py), one item each: `token#<id>`.

The item holds the token's tenant, its job and the create_token step that made it, when it expires
(`expires`), its state (`open`, `completed`, `cancelled`), the data it was completed with, and the
wait_for_token step waiting on it (`waiter`). Two writes meet on it, and its conditions order them:

- a **completion** (the API): `open` and not expired → `completed`, with its data. Of two completions
  exactly one is applied; the other finds it completed (HTTP 409), as does a completion after expiry or
  after the job was cancelled. It answers the token as written, with its waiter, whom the caller resumes;
- a **wait** (the worker, as the job reaches wait_for_token): names itself the waiter while the token is
  `open`; finding it completed (the person was quicker than the job), or expired, it resolves at once.

So a completion that comes before the wait is not lost, and one after it finds its waiter. The item is kept
30 days past the token's expiry (`expires_at`, the table's TTL), so a late completion still answers
"expired", not "unknown".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from botocore.exceptions import ClientError

from shared import settings
from shared.aws.clients import client, is_condition_failure, single_attempt_client
from shared.store import keys, table
from shared.store.conditional import Refused, update_or_refused

_DAY = 86_400


class TokenState(StrEnum):
    OPEN = "open"
    COMPLETED = "completed"
    CANCELLED = "cancelled"  # its job was cancelled: nothing waits for it any more


@dataclass(frozen=True)
class Token:
    id: str
    tenant: str
    job_id: str
    step: str  # the create_token step that made it
    created_at: float
    expires: float  # epoch seconds: completed after this, it answers "expired"
    state: TokenState
    data: Any = None
    completed_at: float | None = None
    waiter: str | None = None  # the wait_for_token step waiting on it
    waiter_run: int = 0

    def expired(self, now: float) -> bool:
        return self.state is TokenState.OPEN and now >= self.expires

    def view(self, now: float) -> dict[str, Any]:
        status = "expired" if self.expired(now) else str(self.state)
        return {"id": self.id, "status": status, "expires_at": self.expires, "completed_at": self.completed_at}


def _dynamodb(single_attempt: bool) -> Any:
    return single_attempt_client("dynamodb") if single_attempt else client("dynamodb")


def _key(token_id: str) -> dict[str, Any]:
    return keys.item_key(keys.token_key(token_id))


def _token(item: dict[str, Any]) -> Token:
    data = item.get("data")
    return Token(
        id=keys.token_id_of(item["pk"]["S"]),
        tenant=item["tenant"]["S"],
        job_id=item["job"]["S"],
        step=item["step"]["S"],
        created_at=float(item["created_at"]["N"]),
        expires=float(item["expires"]["N"]),
        state=TokenState(item["state"]["S"]),
        data=json.loads(data["S"]) if data else None,
        completed_at=float(item["completed_at"]["N"]) if "completed_at" in item else None,
        waiter=item["waiter"]["S"] if "waiter" in item else None,
        waiter_run=int(item["waiter_run"]["N"]) if "waiter_run" in item else 0,
    )


def create(
    token_id: str, tenant: str, job_id: str, step: str, expires: float, now: float, *, single_attempt: bool = False
) -> Token:
    """Write a new open token; the token as it is if this id exists already for this job's step (the
    create_token step recorded again after a lost answer). ValueError if the id belongs to something else."""
    item = _key(token_id) | {
        "tenant": {"S": tenant},
        "job": {"S": job_id},
        "step": {"S": step},
        "created_at": {"N": repr(float(now))},
        "expires": {"N": repr(float(expires))},
        "state": {"S": TokenState.OPEN},
        "expires_at": {"N": str(int(expires) + settings.FINISHED_JOB_TTL_DAYS * _DAY)},
    }
    try:
        _dynamodb(single_attempt).put_item(
            TableName=table.name(),
            Item=item,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if not is_condition_failure(error):
            raise
        existing = _token(error.response.get("Item") or _read(token_id, single_attempt))
        if (existing.tenant, existing.job_id, existing.step) != (tenant, job_id, step):
            raise ValueError(f"token id {token_id} is taken") from None
        return existing
    return _token(item)


def get(token_id: str, *, single_attempt: bool = False) -> Token | None:
    item = _read(token_id, single_attempt)
    return _token(item) if item else None


def _read(token_id: str, single_attempt: bool) -> dict[str, Any]:
    found = _dynamodb(single_attempt).get_item(TableName=table.name(), Key=_key(token_id), ConsistentRead=True)
    return dict(found.get("Item", {}))


@dataclass(frozen=True)
class Completed:
    """This completion was applied: the token with its data, and its waiter (if a step waits on it yet)."""

    token: Token


@dataclass(frozen=True)
class NotCompleted:
    """This completion changed nothing: the token was completed already, expired, or cancelled (`token`
    says which); None if there is no such token."""

    token: Token | None


def complete(token_id: str, data: Any, now: float, *, single_attempt: bool = False) -> Completed | NotCompleted:
    """Complete an open, unexpired token with `data` (JSON, within the limit: checked by the caller)."""
    answer = update_or_refused(
        _dynamodb(single_attempt),
        TableName=table.name(),
        Key=_key(token_id),
        UpdateExpression="SET #state = :completed, #data = :data, completed_at = :now",
        ConditionExpression="#state = :open AND #expires > :now",
        ExpressionAttributeNames={"#state": "state", "#data": "data", "#expires": "expires"},
        ExpressionAttributeValues={
            ":completed": {"S": TokenState.COMPLETED},
            ":open": {"S": TokenState.OPEN},
            ":data": {"S": json.dumps(data, separators=(",", ":"))},
            ":now": {"N": repr(float(now))},
        },
        ReturnValues="ALL_NEW",
    )
    if isinstance(answer, Refused):
        return NotCompleted(_token(answer.item) if answer.item else None)
    return Completed(_token(answer))


def wait(token_id: str, job_id: str, step: str, run: int, *, single_attempt: bool = False) -> Token | None:
    """Name `step` of `job_id` the token's waiter, while it is open: the token after (its waiter set), or as
    it is if it was completed, cancelled or is another job's (the caller resolves the wait at once or
    refuses it); None if there is no such token."""
    answer = update_or_refused(
        _dynamodb(single_attempt),
        TableName=table.name(),
        Key=_key(token_id),
        UpdateExpression="SET waiter = :step, waiter_run = :run",
        ConditionExpression="#state = :open AND #job = :job",
        ExpressionAttributeNames={"#state": "state", "#job": "job"},
        ExpressionAttributeValues={
            ":step": {"S": step},
            ":run": {"N": str(run)},
            ":open": {"S": TokenState.OPEN},
            ":job": {"S": job_id},
        },
        ReturnValues="ALL_NEW",
    )
    item = answer.item if isinstance(answer, Refused) else answer
    return _token(item) if item else None


def cancel(token_id: str, *, single_attempt: bool = False) -> None:
    """Its job was cancelled: an open token completes nothing from now on (a completion answers 409)."""
    update_or_refused(
        _dynamodb(single_attempt),
        TableName=table.name(),
        Key=_key(token_id),
        UpdateExpression="SET #state = :cancelled",
        ConditionExpression="#state = :open",
        ExpressionAttributeNames={"#state": "state"},
        ExpressionAttributeValues={":cancelled": {"S": TokenState.CANCELLED}, ":open": {"S": TokenState.OPEN}},
    )
