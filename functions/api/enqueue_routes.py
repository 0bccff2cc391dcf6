"""The enqueue path answered without the resolver: POST /v1/jobs, POST /v1/jobs:batch, GET /v1/jobs/{id}.

These three routes are most of the API's traffic and every cold start's first request, so they
skip what the Powertools resolver costs (pydantic, its OpenAPI models, every other router:
together several times the import cost of boto3). They answer exactly as the resolver's routes in
functions/api/jobs.py would: their bodies are validated as those routes' models validate them
(functions/api/job_bodies.py), so a 422 names the same field with the same message, and the
resolver's quirks are kept (a JSON null body is a missing body; functions/api/body.py refuses any
other non-object body). The routes in functions/api/jobs.py still declare them in the OpenAPI
document and answer them if a request ever reaches the resolver.

The tenant is the handler's argument (the key it checked), and a domain error is answered by the
handler through functions/api/responses.py, the mapping the resolver's routes use too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger

from functions.api import job_bodies
from functions.api.responses import MAX_FIELD_CHARS, MAX_MESSAGE_CHARS, cut, invalid_fields, json_result
from shared.aws.metrics import jobs_enqueued
from shared.errors import PayloadTooLarge, QuotaExceeded
from shared.jobs.enqueue import BulkOutcome, JobRequest, NotSent, enqueue, enqueue_many
from shared.jobs.status import job_status
from shared.model.message import JobMessage
from shared.store.flow.unique_keys import DuplicateOf

logger = Logger(service="corral-api", child=True)
Route = Callable[[str, Any], dict[str, Any]]
# A job id the resolver's <job_id> would match too; anything else (longer, other characters) goes to the resolver.
_JOB_PATH = re.compile(r"/v1/jobs/([A-Za-z0-9_.~-]{1,128})")


def route(method: str, path: str) -> tuple[Route, str] | None:
    """The enqueue-path route for a request and the path's parameter, or None: the resolver answers it."""
    if method == "POST":
        if path == "/v1/jobs":
            return post_job, ""
        if path == "/v1/jobs:batch":
            return post_jobs_batch, ""
        return None
    if method == "GET" and (found := _JOB_PATH.fullmatch(path)):
        return get_job, found.group(1)
    return None


def post_job(tenant: str, body: Any) -> dict[str, Any]:
    fields = job_bodies.validate("JOB_IN", body)
    if isinstance(fields, list):
        return json_result(*invalid_fields(fields))
    message = enqueue(tenant, JobRequest.from_fields(fields))
    if isinstance(message, DuplicateOf):
        return json_result(200, duplicate(message))
    jobs_enqueued()
    return json_result(202, accepted(message))


def duplicate(holder: DuplicateOf) -> dict[str, Any]:
    """A job refused for its unique key: the job holding the key (docs/decisions/unique-jobs.md)."""
    return {"id": holder.id, "status": "duplicate"}


def accepted(message: JobMessage) -> dict[str, Any]:
    """An enqueued job's answer: its id and `queued`; for a keyed job, also its request's fingerprint, which
    GET /v1/jobs/{id} shows for the request that runs under the key (docs/decisions/idempotency-keys.md)."""
    return {"id": message.id, "status": "queued"} | ({"request": message.request} if message.request else {})


def post_jobs_batch(tenant: str, body: Any) -> dict[str, Any]:
    fields = job_bodies.validate("JOBS_BATCH_IN", body)
    if isinstance(fields, list):
        return json_result(*invalid_fields(fields))
    return json_result(*enqueue_items(tenant, fields["jobs"]))


def get_job(tenant: str, job_id: str) -> dict[str, Any]:
    return json_result(200, job_status(tenant, job_id).public())


def enqueue_items(tenant: str, items: list[Any]) -> tuple[int, dict[str, Any]]:
    """A batch's answer: each item validated on its own, the valid ones enqueued together; 202, or 207 if any failed."""
    parsed = [job_bodies.parse_job(item) for item in items]
    enqueued = iter(enqueue_many(tenant, [item for item in parsed if isinstance(item, JobRequest)]))
    outcomes = [next(enqueued) if isinstance(item, JobRequest) else item for item in parsed]
    not_sent = [outcome.detail for outcome in outcomes if isinstance(outcome, NotSent)]
    if not_sent:  # AWS's words stay in the log: they can name the account and roles
        logger.warning("bulk jobs not sent", extra={"count": len(not_sent), "details": sorted(set(not_sent))[:10]})
    results = [_item_result(index, outcome) for index, outcome in enumerate(outcomes)]
    rejected = sum(1 for result in results if result["status"] == "rejected")
    return 207 if rejected else 202, {"accepted": len(results) - rejected, "rejected": rejected, "results": results}


def _item_result(index: int, outcome: BulkOutcome) -> dict[str, Any]:
    if isinstance(outcome, JobMessage):
        return {"index": index} | accepted(outcome)
    if isinstance(outcome, DuplicateOf):
        return {"index": index} | duplicate(outcome)
    if isinstance(outcome, NotSent):
        return {"index": index, "status": "rejected", "error": "unavailable", "message": outcome.reason}
    if isinstance(outcome, QuotaExceeded):
        code = "quota_exceeded" if outcome.retry_can_help else "forbidden"
        return {
            "index": index,
            "status": "rejected",
            "error": code,
            "message": outcome.message,
            "quota": outcome.limit_name,
        }
    field = cut(job_bodies.item_field(index, outcome), MAX_FIELD_CHARS)
    code = "payload_too_large" if isinstance(outcome, PayloadTooLarge) else "invalid_request"
    message = cut(outcome.message, MAX_MESSAGE_CHARS)
    return {"index": index, "status": "rejected", "error": code, "message": message, "field": field}
