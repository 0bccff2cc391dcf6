"""A job type's payload declared as a JSON Schema: checked at synth, enforced by the API at enqueue.

A type declares it with `@job_type(name, payload_schema={...})`. The schema is data, written into
the declarations at synth (infra/jobs_package.py), so the API refuses a bad payload with a 422 naming
the field without importing the type's module (docs/decisions/payload-schemas.md).

The validator is jsonschema_rs, imported with the first schema used, not at the API's cold start: it
is one native extension of ~15 MB, and most jobs (built-in types) never need it. A schema is read as
its `$schema` says (2020-12 when it names none); it may refer only to itself, never fetch a `$ref`.
A refusal's message is written here from the schema's side: the library's own quotes the payload's
value, and an error never echoes the request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from shared.jobs import payloads
from shared.jobs.registry import InvalidPayload

if TYPE_CHECKING:
    import jsonschema_rs

PAYLOAD_FIELD = "payload"  # where the payload sits in a job; refusals name fields below it


def problem_with(schema: Mapping[str, Any]) -> str | None:
    """Why `schema` cannot check payloads (not a valid JSON Schema, a bad pattern, a `$ref` to
    somewhere else), or None if it can."""
    import jsonschema_rs

    try:
        _validator(_canonical(schema))
    except jsonschema_rs.ValidationError as error:  # the schema refused by its meta-schema, or unresolvable
        where = "/".join(str(part) for part in error.instance_path)
        first_line = error.message.strip().splitlines()[0]
        return f"at {where}: {first_line}" if where else first_line
    except (jsonschema_rs.ReferencingError, ValueError) as error:
        return str(error).strip().splitlines()[0]
    return None


def check(schema: Mapping[str, Any], payload: Any) -> None:
    """Raise InvalidPayload naming the first place in `payload` that `schema` refuses."""
    validator = _validator(_canonical(schema))
    try:
        refusal = next(iter(validator.iter_errors(payload)), None)
    except UnicodeEncodeError as error:  # JSON's \ud800 escapes parse, but the validator reads UTF-8 text
        where = _lone_surrogate(payload) or PAYLOAD_FIELD
        raise InvalidPayload(where, "holds a string that is not valid Unicode (a lone surrogate)") from error
    if refusal is not None:
        raise InvalidPayload(_field(refusal), _message(refusal))


def _canonical(schema: Mapping[str, Any]) -> str:
    """The schema as text: one compiled validator per distinct schema, whichever dict it came in."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


@cache
def _validator(schema_text: str) -> jsonschema_rs.Validator:
    import jsonschema_rs  # here, not at import: see the module's docstring

    # offline: a `$ref` to anything outside the schema fails here (at synth), never a fetch from the API.
    return jsonschema_rs.validator_for(json.loads(schema_text), offline=True)


def _field(refusal: jsonschema_rs.ValidationError) -> str:
    """The refused place as a field name, `payload.items[2].name`; a missing or unexpected
    property is named itself, not the object that misses or holds it."""
    field = PAYLOAD_FIELD + "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in refusal.instance_path
    )
    details = refusal.kind.as_dict()
    if refusal.kind.name == "required":
        return f"{field}.{details['property']}"
    if refusal.kind.name in ("additionalProperties", "unevaluatedProperties") and details.get("unexpected"):
        return f"{field}.{details['unexpected'][0]}"
    return field


def _message(refusal: jsonschema_rs.ValidationError) -> str:
    explain = _EXPLANATIONS.get(refusal.kind.name)
    if explain is None:
        return f"does not match the type's payload schema (its {refusal.kind.name!r} keyword)"
    return explain(refusal.kind.as_dict())


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# What a refusal of each keyword tells the caller, from the schema's values alone.
_EXPLANATIONS: dict[str, Callable[[dict[str, Any]], str]] = {
    "type": lambda d: f"must be of type {' or '.join(d['types'])}",
    "required": lambda d: "is required",
    "additionalProperties": lambda d: "is not a property this type's payload has",
    "unevaluatedProperties": lambda d: "is not a property this type's payload has",
    "falseSchema": lambda d: "is not allowed here",
    "minimum": lambda d: f"must be at least {_json(d['limit'])}",
    "maximum": lambda d: f"must be at most {_json(d['limit'])}",
    "exclusiveMinimum": lambda d: f"must be greater than {_json(d['limit'])}",
    "exclusiveMaximum": lambda d: f"must be less than {_json(d['limit'])}",
    "multipleOf": lambda d: f"must be a multiple of {_json(d['multiple_of'])}",
    "minLength": lambda d: f"must be at least {d['limit']} characters long",
    "maxLength": lambda d: f"must be at most {d['limit']} characters long",
    "pattern": lambda d: f"must match the pattern {_json(d['pattern'])}",
    "format": lambda d: f"must be a valid {d['format']}",
    "enum": lambda d: f"must be one of {_json(d['options'])}",
    "const": lambda d: f"must be {_json(d['expected_value'])}",
    "minItems": lambda d: f"must have at least {d['limit']} items",
    "maxItems": lambda d: f"must have at most {d['limit']} items",
    "uniqueItems": lambda d: "must not repeat an item",
    "additionalItems": lambda d: "has more items than this type's payload allows",
    "unevaluatedItems": lambda d: "has more items than this type's payload allows",
    "contains": lambda d: "must contain an item the schema's 'contains' accepts",
    "minProperties": lambda d: f"must have at least {d['limit']} properties",
    "maxProperties": lambda d: f"must have at most {d['limit']} properties",
    "propertyNames": lambda d: "has a property name the schema's 'propertyNames' refuses",
    "anyOf": lambda d: "must match at least one of the schemas in 'anyOf'",
    "oneOf": lambda d: "must match exactly one of the schemas in 'oneOf'",
    "not": lambda d: "must not match the schema in 'not'",
}


def _lone_surrogate(payload: Any) -> str | None:
    """The field of the first string or key holding half a UTF-16 pair, or None."""
    for here, node in payloads.nodes(payload, PAYLOAD_FIELD):
        if isinstance(node, str) and any(0xD800 <= ord(character) <= 0xDFFF for character in node):
            return here
    return None
