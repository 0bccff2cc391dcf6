"""A job calling a rate-limited partner API: at most two calls per partner run at once, fleet-wide.

`concurrency_key` reads the key from the payload and `concurrency_limit` bounds how many of one
tenant's jobs with that key run at once; the others wait, using no attempt, and start as a slot
frees (docs/decisions/concurrency-keys.md). A job may give its own `concurrency` instead.
"""

from __future__ import annotations

import time
from typing import Any

from corral_jobs import JobContext, job_type

PARTNER_CALL = {
    "type": "object",
    "properties": {"partner": {"type": "string", "minLength": 1}, "seconds": {"type": "number", "maximum": 5}},
    "required": ["partner"],
}


@job_type(
    "partner_call",
    timeout_seconds=5,
    payload_schema=PARTNER_CALL,
    concurrency_key="partner",
    concurrency_limit=2,
)
def partner_call(payload: dict[str, Any], context: JobContext) -> dict[str, Any]:
    time.sleep(payload.get("seconds", 0.5))  # the partner's answer takes this long
    return {"partner": payload["partner"], "called_at_attempt": context.attempt}
