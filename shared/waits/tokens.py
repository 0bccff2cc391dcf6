"""Completing a token (docs/decisions/durable-jobs.md "Tokens: waiting for a person"): with the tenant's key,
or keyless through its capability URL. The token's item is completed once (a second completion, an expired
or a cancelled token: Conflict saying which); its waiting job, if one waits on it yet, resumes with the data.
"""

from __future__ import annotations

import json
import time
from typing import Any

from shared.durable import limits, steps, tokens
from shared.errors import Conflict, NotFound, PayloadTooLarge
from shared.store.durable import token_items
from shared.store.durable.token_items import TokenState
from shared.waits import resume


def tenant_of(token_id: str, capability: str, secret: bytes) -> str:
    """The tenant whose token `token_id` is, if `capability` is its capability; NotFound otherwise, as for an
    unknown token (a wrong capability says nothing more)."""
    token = token_items.get(token_id) if tokens.is_token_id(token_id) else None
    if token is None or not tokens.verifies(secret, token.tenant, token_id, capability):
        raise NotFound(f"no token {token_id}")
    return token.tenant


def complete(tenant: str, token_id: str, data: Any) -> dict[str, Any]:
    """Complete the tenant's token with `data`: {"id", "status": "completed"}. NotFound for an unknown token or
    another tenant's; Conflict if it was completed already, has expired, or its job was cancelled."""
    size = len(json.dumps(data, separators=(",", ":")).encode())
    if size > limits.MAX_STEP_RESULT_BYTES:
        raise PayloadTooLarge("data", f"is {size} bytes, over the limit of {limits.MAX_STEP_RESULT_BYTES}")
    token = token_items.get(token_id) if tokens.is_token_id(token_id) else None
    if token is None or token.tenant != tenant:
        raise NotFound(f"no token {token_id}")
    now = time.time()
    done = token_items.complete(token_id, data, now)
    if isinstance(done, token_items.NotCompleted):
        found = done.token or token
        if found.state is TokenState.COMPLETED:
            raise Conflict(f"token {token_id} is completed already")
        if found.state is TokenState.CANCELLED:
            raise Conflict(f"token {token_id} is cancelled: its job was")
        raise Conflict(f"token {token_id} has expired")
    completed = done.token
    if completed.waiter is not None:  # a step waits on it: it resumes (one not yet waiting finds the data itself)
        change = steps.Resolved(awaits=f"token:{token_id}", by="token", result_json=json.dumps(data))
        resume.resolve(completed.job_id, tenant, completed.waiter, change, now)
    return {"id": token_id, "status": "completed"}
