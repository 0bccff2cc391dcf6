"""The API function's handler called in-process (moto behind it): one request, its status and parsed body."""

from __future__ import annotations

import json
from typing import Any

from functions.api.handler import handler
from local.events import FakeLambdaContext, http_api_event


def answer(method: str, path: str, key: str, body: Any = None, query: dict[str, str] | None = None) -> tuple[int, Any]:
    """The handler's answer to one request with the API key `key`: (status, the JSON body)."""
    event = http_api_event(method, path, body, key)
    if query:
        event["queryStringParameters"] = query
        event["rawQueryString"] = "&".join(f"{name}={value}" for name, value in query.items())
    response = handler(event, FakeLambdaContext())
    return response["statusCode"], json.loads(response["body"])
