"""Print the OpenAPI document the API serves at /v1/openapi.json, from the API's own handler (no stack
needed), keys sorted: what client-ts's types are generated from at build time (scripts/generate.mjs).

    .venv/bin/python client-ts/scripts/served_openapi.py > openapi.json
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
for name, value in {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "none",
    "AWS_SECRET_ACCESS_KEY": "none",
}.items():
    os.environ.setdefault(name, value)


def served_document() -> dict[str, object]:
    # The handler logs its request line to stdout, where the document goes: its logger is made at import.
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Powertools: "No application metrics to publish"
        from functions.api.handler import handler
        from local.events import FakeLambdaContext, http_api_event  # the API handler's synthetic event

        answer = handler(http_api_event("GET", "/v1/openapi.json"), FakeLambdaContext())
    if answer["statusCode"] != 200:
        raise SystemExit(f"the API answered {answer['statusCode']} for /v1/openapi.json")
    return json.loads(answer["body"])


if __name__ == "__main__":
    print(json.dumps(served_document(), indent=2, sort_keys=True))
