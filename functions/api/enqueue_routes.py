"""The enqueue path answered without the resolver: POST /v1/jobs, POST /v1/jobs:batch, GET /v1/jobs/{id}.

These three routes are most of the API's traffic and every cold start's first request, so they
skip what the Powertools resolver costs (pydantic, its OpenAPI models, every other router:
together several times the import cost of boto3). They answer exactly as the resolver's routes in
functions/api/jobs.py would: the bodies are validated by pydantic-core with the core schemas of
those same pydantic models (functions/api/job_schemas.py, generated from them and checked
equal by a test), so a 422 names the same field with the same message, and the resolver's quirks
are kept (a JSON null body is a missing body; functions/api/body.py refuses any other non-object body).
The routes in functions/api/jobs.py still declare them in the OpenAPI document and answer them
if a request ever reaches the resolver.

Errors other than validation are answered by the resolver's own exception handlers
(functions/api/resolver.py builds them on the first such error), so each domain error is mapped once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from functions.api import job_schemas
from functions.api.responses import MAX_FIELD_CHARS, MAX_MESSAGE_CHARS, cut, error_result, invalid_fields, json_result
from shared.aws.metrics import jobs_enqueued
from shared.errors import InvalidRequest, PayloadTooLarge, QuotaExceeded
from shared.jobs.enqueue import BulkOutcome, JobRequest, NotSent, enqueue, enqueue_many
from shared.jobs.status import job_status
from shared.model import JobMessage

if TYPE_CHECKING:
    from pydantic_core import SchemaValidator

logger = Logger(service="corral-api", child=True)
Route = Callable[[str, Any], dict[str, Any]]
# A job id the resolver's <job_id> would match too; anything else (longer, other characters) goes to the resolver.
_JOB_PATH = re.compile(r"/v1/jobs/([A-Za-z0-9_.~-]{1,128})")


class _Validated:
    """What the core schema's model validator fills in (fields as attributes), in place of the pydantic model."""


@cache
def _validator(name: str) -> SchemaValidator:
    from pydantic_core import SchemaValidator  # on the first body that needs it: see _plain_fields

    return SchemaValidator({**getattr(job_schemas, name), "cls": _Validated})


def _fields(schema: str, validated: _Validated) -> dict[str, Any]:
    return {name: getattr(validated, name) for name in getattr(job_schemas, schema)["schema"]["fields"]}


_MISSING = object()


def _length_within(schema: dict[str, Any], length: int) -> bool:
    return schema.get("min_length", 0) <= length <= schema.get("max_length", length)


def _plain(schema: dict[str, Any], value: Any) -> bool:
    """Whether pydantic-core would take `value` for this field schema as it is, unconverted.

    A subset only (exact JSON types within their bounds); False means "not sure", never "invalid".
    """
    kind = schema["type"]
    if kind == "default":
        return "default" in schema and (value is _MISSING or _plain(schema["schema"], value))
    if kind == "nullable":
        return value is None or _plain(schema["schema"], value)
    if kind == "any":
        return value is not _MISSING
    if kind == "int":
        return type(value) is int and schema.get("ge", value) <= value <= schema.get("le", value)
    if kind == "str":
        if type(value) is not str or not _length_within(schema, len(value)):
            return False
        try:
            value.encode()  # a lone surrogate (JSON "\ud800") is not a string to pydantic-core
        except UnicodeEncodeError:
            return False
        return True
    if kind == "list":
        items = schema.get("items_schema", {"type": "any"})
        return type(value) is list and _length_within(schema, len(value)) and items["type"] == "any"
    return False  # datetimes and the rest: pydantic-core parses them


def _plain_fields(schema: str, value: Any) -> dict[str, Any] | None:
    """The fields of a body pydantic-core would accept unchanged, without importing it; None: ask it.

    Most enqueues are plain JSON of the right types: checking those here keeps pydantic-core (a fifth
    of boto3's import time) off the cold path. Anything else, every invalid body included, is
    validated by pydantic-core, so each answer and each 422 is its own.
    """
    whole = getattr(job_schemas, schema)
    fields: dict[str, Any] = whole["schema"]["fields"]
    if whole["config"] != {"extra_fields_behavior": "forbid", "title": whole["config"].get("title")}:
        return None  # another config (strictness, stripping, aliases...) changes what is plain
    if type(value) is not dict or not value.keys() <= fields.keys():
        return None
    found = {}
    for name, field in fields.items():
        if field.keys() != {"type", "schema"}:  # an alias, a validator...: not plain
            return None
        given = value.get(name, _MISSING)
        if not _plain(field["schema"], given):
            return None
        found[name] = field["schema"].get("default") if given is _MISSING else given
    return found


def _validate(schema: str, value: Any) -> dict[str, Any] | list[dict[str, Any]]:
    """The fields of a valid body, or the problems with it (pydantic's own, located under "body")."""
    if value is None:  # as the resolver reads a missing or null body
        return [{"type": "missing", "loc": ("body",), "msg": "Field required"}]
    plain = _plain_fields(schema, value)
    if plain is not None:
        return plain
    from pydantic_core import ValidationError

    try:
        validated = _validator(schema).validate_python(value, from_attributes=True)
    except ValidationError as error:
        return [{**problem, "loc": ("body", *problem["loc"])} for problem in error.errors(include_url=False)]
    return _fields(schema, validated)


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
    fields = _validate("JOB_IN", body)
    if isinstance(fields, list):
        return json_result(*invalid_fields(fields))
    message = enqueue(tenant, JobRequest.from_fields(fields))
    jobs_enqueued()
    return json_result(202, accepted(message))


def accepted(message: JobMessage) -> dict[str, Any]:
    """An enqueued job's answer: its id and `queued`; for a keyed job, also its request's fingerprint, which
    GET /v1/jobs/{id} shows for the request that runs under the key (docs/decisions/idempotency-keys.md)."""
    return {"id": message.id, "status": "queued"} | ({"request": message.request} if message.request else {})


def post_jobs_batch(tenant: str, body: Any) -> dict[str, Any]:
    fields = _validate("JOBS_BATCH_IN", body)
    if isinstance(fields, list):
        return json_result(*invalid_fields(fields))
    return json_result(*enqueue_items(tenant, fields["jobs"]))


def get_job(tenant: str, job_id: str) -> dict[str, Any]:
    record = job_status(tenant, job_id)
    if record is None:
        return error_result(404, "not_found", f"no job {job_id!r}")
    return json_result(200, record.public())


def enqueue_items(tenant: str, items: list[Any]) -> tuple[int, dict[str, Any]]:
    """A batch's answer: each item validated on its own, the valid ones enqueued together; 202, or 207 if any failed."""
    parsed = [parse_job(item) for item in items]
    enqueued = iter(enqueue_many(tenant, [item for item in parsed if isinstance(item, JobRequest)]))
    outcomes = [next(enqueued) if isinstance(item, JobRequest) else item for item in parsed]
    not_sent = [outcome.detail for outcome in outcomes if isinstance(outcome, NotSent)]
    if not_sent:  # AWS's words stay in the log: they can name the account and roles
        logger.warning("bulk jobs not sent", extra={"count": len(not_sent), "details": sorted(set(not_sent))[:10]})
    results = [_item_result(index, outcome) for index, outcome in enumerate(outcomes)]
    rejected = sum(1 for result in results if result["status"] == "rejected")
    return 207 if rejected else 202, {"accepted": len(results) - rejected, "rejected": rejected, "results": results}


def parse_job(item: Any) -> JobRequest | InvalidRequest:
    """One job body of a list (POST /v1/jobs:batch, POST /v1/batches), validated as POST /v1/jobs's: its
    request, or its first problem (its field relative to the job)."""
    plain = _plain_fields("JOB_IN", item)
    if plain is not None:
        return JobRequest.from_fields(plain)
    from pydantic_core import ValidationError

    try:
        validated = _validator("JOB_IN").validate_python(item)
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        return InvalidRequest(".".join(str(part) for part in problem.get("loc", ())), problem.get("msg", "invalid"))
    return JobRequest.from_fields(_fields("JOB_IN", validated))


def _item_result(index: int, outcome: BulkOutcome) -> dict[str, Any]:
    if isinstance(outcome, JobMessage):
        return {"index": index} | accepted(outcome)
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
    field = cut(f"jobs[{index}]" + (f".{outcome.field}" if outcome.field else ""), MAX_FIELD_CHARS)
    code = "payload_too_large" if isinstance(outcome, PayloadTooLarge) else "invalid_request"
    message = cut(outcome.message, MAX_MESSAGE_CHARS)
    return {"index": index, "status": "rejected", "error": code, "message": message, "field": field}
