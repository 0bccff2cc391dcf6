"""JSON responses and the error shape every 4xx/5xx shares: {"error": code, "message": text}."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response


def json_response(status: int, body: dict[str, Any]) -> Response[dict[str, Any]]:
    # The resolver serialises the dict (and validates it against the route's return type).
    return Response(status_code=status, content_type="application/json", body=body)


def error_response(status: int, code: str, message: str, **details: Any) -> Response:
    return json_response(status, {"error": code, "message": message, **details})
