"""API fuzzing (schemathesis) against the running stack's own OpenAPI document, every operation.

Each generated request is sent twice, with the tenant's key and without one. Whatever arrives:
no 5xx, the status and body are ones the document declares, and every error is JSON with
`error` and `message`. Schema-valid (positive) and schema-violating (negative) requests both.
The suite runs a few examples per operation; `make fuzz` runs many more (CORRAL_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = int(os.environ.get("CORRAL_FUZZ_EXAMPLES", "25"))  # per operation and mode
RANDOM_DRAWS = os.environ.get("CORRAL_FUZZ_RANDOM") == "1"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def api_schema(deployed):
    return schemathesis.openapi.from_url(deployed.api_url + "/v1/openapi.json", timeout=30)


def _operations(schema) -> list:
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 7, [operation.label for operation in operations]
    return operations


def _send(case, deployed, api_key: str | None, seen: set[int]):
    case.headers = {name: value for name, value in (case.headers or {}).items() if name.lower() != "authorization"}
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = case.call(base_url=deployed.api_url, headers=headers, timeout=30)
    # Not schemathesis's negative_data_rejection: a batch answers 207 with every bad item rejected by itself.
    case.validate_response(response, checks=CHECKS, headers=headers)
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("error"), str) and isinstance(body.get("message"), str), response.text[:300]
        assert len(response.content) < 4_000, f"an error body of {len(response.content)} bytes echoes the request"
    if api_key is None:
        assert response.status_code == 401, (case.method, case.path, response.status_code, response.text[:300])
    seen.add(response.status_code)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_every_operation_with_and_without_a_key_answers_documented_json_and_never_5xx(deployed, api_schema, mode):
    seen: set[int] = set()
    for operation in _operations(api_schema):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            # The suite draws the same examples every run (a red CI is then a regression, not a new
            # draw); `make fuzz` draws new ones each time, many more.
            derandomize=not RANDOM_DRAWS,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
        )
        def fuzz(case) -> None:
            _send(case, deployed, deployed.api_key, seen)
            _send(case, deployed, None, seen)

        try:
            fuzz()
        except Exception as error:
            error.add_note(f"operation: {operation.label} ({mode.name.lower()} data)")
            raise
    # The requests reached the API and it told them apart: accepted, refused for data, refused for the key.
    assert {401, 422} <= seen, seen
    if mode is GenerationMode.POSITIVE:
        assert seen & {200, 201, 202, 207}, seen
