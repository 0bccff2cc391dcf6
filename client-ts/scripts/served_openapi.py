"""Write the OpenAPI document the API serves at /v1/openapi.json to a file, from the API's own handler (no
stack needed): what client-ts's types are generated from (the Makefile's client-ts build,
tests/unit/test_client_ts.py). Usage: python client-ts/scripts/served_openapi.py client-ts/openapi.json"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
for name, value in {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "none",
    "AWS_SECRET_ACCESS_KEY": "none",
}.items():
    os.environ.setdefault(name, value)

from functions.api.handler import handler  # noqa: E402
from tests.events import FakeLambdaContext, http_api_event  # noqa: E402


def served_document() -> dict[str, object]:
    answer = handler(http_api_event("GET", "/v1/openapi.json", None, None), FakeLambdaContext())
    if answer["statusCode"] != 200:
        raise SystemExit(f"the API answered {answer['statusCode']} for /v1/openapi.json")
    return json.loads(answer["body"])


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(served_document(), indent=2, sort_keys=True) + "\n")
