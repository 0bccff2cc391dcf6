"""Synthetic Lambda inputs, to call a function's handler in-process: an API Gateway HTTP API (payload 2.0)
event and the context Powertools reads. Used by the unit tests, the benchmark (which times the API
handler with them) and client-ts's build (which asks the handler for its OpenAPI document)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any


def http_api_event(method: str, path: str, body: Any = None, api_key: str | None = None) -> dict[str, Any]:
    headers = {"content-type": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "bench",
            "domainName": "bench.execute-api.localhost",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "timeEpoch": int(time.time() * 1000),
        },
        "body": None if body is None else json.dumps(body),
        "isBase64Encoded": False,
    }


class FakeLambdaContext:
    """The attributes Powertools' logger reads from a Lambda context."""

    function_name = "corral-api"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:corral-api"
    memory_limit_in_mb = 1024
    aws_request_id = "bench"
    log_group_name = "/aws/lambda/corral-api"
    log_stream_name = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000
