"""A job type's payload schema: checked as a JSON Schema at synth, enforced at enqueue with a 422 naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from infra import jobs_package
from shared.errors import InvalidRequest
from shared.jobs import job_types, payload_schemas
from shared.jobs.enqueue import check_job
from shared.model import JobSpec

RESIZE_PAYLOAD = {
    "type": "object",
    "properties": {
        "width": {"type": "integer", "minimum": 1, "maximum": 4096},
        "formats": {"type": "array", "items": {"enum": ["png", "webp"]}},
    },
    "required": ["width"],
    "additionalProperties": False,
}


@job_types.job_type("unit_resize", payload_schema=RESIZE_PAYLOAD)
def _resize(payload: Any, context: job_types.JobContext) -> Any:
    return payload


def _refusal(payload: Any, field_prefix: str = "") -> tuple[str, str] | None:
    try:
        check_job(JobSpec("unit_resize", payload), tenant="acme", field_prefix=field_prefix)
    except InvalidRequest as error:
        return error.field, error.message
    return None


def test_a_payload_the_schema_accepts_is_accepted() -> None:
    assert _refusal({"width": 10, "formats": ["webp"]}) is None


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        (None, "payload", "must be of type object"),
        ({}, "payload.width", "is required"),
        ({"width": "secret-value"}, "payload.width", "must be of type integer"),
        ({"width": 5000}, "payload.width", "must be at most 4096"),
        ({"width": 5, "depth": 1}, "payload.depth", "is not a property this type's payload has"),
        ({"width": 5, "formats": ["png", "tiff"]}, "payload.formats[1]", 'must be one of ["png","webp"]'),
        ({"width": 5, "formats": "png"}, "payload.formats", "must be of type array"),
    ],
)
def test_a_payload_the_schema_refuses_is_422_naming_the_field(payload: Any, field: str, message: str) -> None:
    assert _refusal(payload) == (field, message)
    assert _refusal(payload, field_prefix="job.") == (f"job.{field}", message)


def test_a_refusal_never_echoes_the_payload() -> None:
    for payload in ({"width": "secret-value"}, {"width": 1, "formats": ["secret-value"]}, ["secret-value"]):
        refused = _refusal(payload)
        assert refused is not None and "secret-value" not in refused[1]


def test_a_string_that_is_not_unicode_is_refused_not_a_500() -> None:
    assert _refusal({"width": 5, "formats": ["\ud800"]}) == (
        "payload.formats[0]",
        "holds a string that is not valid Unicode (a lone surrogate)",
    )


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "objectx"}, "at type:"),
        ({"properties": {"name": {"pattern": "(x"}}}, 'at properties/name/pattern: "(x" is not a "regex"'),
        ({"$ref": "https://schemas.example.com/resize.json"}, "Retrieval is disabled"),
        ({"properties": {"a": {"$ref": "#/$defs/missing"}}}, "/$defs/missing"),
    ],
)
def test_a_schema_that_cannot_check_payloads_stops_the_synth_naming_the_type(schema: dict, problem: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        jobs_package.check_payload_schemas([{"name": "resize", "payload_schema": schema}])
    message = str(stopped.value)
    assert message.startswith("corral:jobs: job type 'resize': payload_schema is not a usable JSON Schema: ")
    assert problem in message


@pytest.mark.parametrize("schema", [["not", "an", "object"], {"default": float("nan")}, {"const": object()}])
def test_a_schema_that_is_not_plain_json_is_refused_when_the_type_is_declared(schema: Any) -> None:
    with pytest.raises(ValueError, match="job type 'unit_unwritable': payload_schema must be"):
        job_types.job_type("unit_unwritable", payload_schema=schema)


def test_one_schema_is_compiled_once() -> None:
    payload_schemas._validator.cache_clear()
    for _ in range(3):
        _refusal({"width": 10})
        _refusal({"width": 0})
    assert payload_schemas._validator.cache_info().currsize == 1
