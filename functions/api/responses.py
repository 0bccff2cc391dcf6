"""JSON responses and the error shape every 4xx/5xx shares: {"error": code, "message": text, "field"?, "fields"?}.

An error never echoes the request: anything in it that came from the client (a field name, a
path, an id) is cut to a few dozen characters here, whatever the caller passed.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response

MAX_MESSAGE_CHARS = 300
MAX_FIELD_CHARS = 100
MAX_FIELDS = 20


def json_response(status: int, body: dict[str, Any]) -> Response[dict[str, Any]]:
    # The resolver serialises the dict (and validates it against the route's return type).
    return Response(status_code=status, content_type="application/json", body=body)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "message": cut(message, MAX_MESSAGE_CHARS)}
    if "field" in details:
        body["field"] = cut(str(details.pop("field")), MAX_FIELD_CHARS)
    if "fields" in details:
        body["fields"] = [
            {"field": cut(str(f.get("field", "")), MAX_FIELD_CHARS), "message": cut(str(f.get("message", "")), 200)}
            for f in details.pop("fields")[:MAX_FIELDS]
        ]
    return body | details


def error_response(status: int, code: str, message: str, **details: Any) -> Response:
    return json_response(status, error_body(code, message, **details))


def error_result(status: int, code: str, message: str, **details: Any) -> dict[str, Any]:
    """An error as the Lambda's return value (API Gateway payload 2.0), for answers given before the resolver."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(error_body(code, message, **details), separators=(",", ":")),
        "isBase64Encoded": False,
    }
