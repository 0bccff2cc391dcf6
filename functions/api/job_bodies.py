"""A job's body as POST /v1/jobs takes it, validated without the resolver: the enqueue routes'
bodies, and each job of a list (POST /v1/jobs:batch, POST /v1/batches).

Validated by pydantic-core with the core schemas of functions/api/jobs.py's own pydantic models
(functions/api/job_schemas.py, generated from them and checked equal by a test), so a 422 names the
same field with the same message as the resolver's would; a body of plain JSON types within bounds
is taken as it is, without importing pydantic-core at all. On the enqueue path: it imports neither
pydantic nor the resolver (tests/unit/api/test_cold_start.py).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from functions.api import job_schemas
from shared.errors import InvalidRequest
from shared.jobs.enqueue import JobRequest

if TYPE_CHECKING:
    from pydantic_core import SchemaValidator


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


def validate(schema: str, value: Any) -> dict[str, Any] | list[dict[str, Any]]:
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


def item_field(index: int, error: InvalidRequest) -> str:
    """The field at fault in the `index`th job of a list, named from the list: `jobs[3].payload`."""
    return f"jobs[{index}]" + (f".{error.field}" if error.field else "")
