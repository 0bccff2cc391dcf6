"""The API's enqueue path stays cheap to start and answers exactly as the resolver's routes would.

The enqueue routes (functions/api/enqueue_routes.py) answer without the Powertools resolver; the
resolver (functions/api/resolver.py) still declares and can answer them. Here: the cold import and a
first enqueue load none of what only other routes need, the validation schemas are the models'
own, and both paths give the same answer to the same request, bad input included.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.api import job_schemas
from local.events import FakeLambdaContext, http_api_event
from shared import settings as corral_settings
from shared.environment import FunctionEnv
from shared.jobs import job_types
from shared.tenants import tenants

ROOT = Path(__file__).resolve().parents[3]

# What only other routes, the OpenAPI document or the worker need: never loaded by an enqueue.
NOT_ON_THE_ENQUEUE_PATH = (
    "functions.api.resolver",
    "functions.api.jobs",
    "functions.api.openapi_docs",
    "functions.api.answers",
    "functions.api.caller",
    "functions.api.models",
    "functions.api.batches",
    "functions.api.dashboard_files",
    "functions.api.operator",
    "functions.api.control",
    "functions.api.schedules",
    "functions.api.signing_secrets",
    "shared.jobs.listing",
    "shared.jobs.stats",
    "shared.control.cancel",
    "shared.control.retry",
    "shared.targets.signing_secrets",
    "shared.schedules.definitions",
    "shared.schedules.lifecycle",
    "shared.schedules.queries",
    "shared.targets.http",
    "shared.targets.http_policy",
    "shared.operations.dead_letters",
    "shared.store.jobs.job_claims",  # the worker's: the API reads records, never claims them
    "pydantic",
    "pynamodb",
    "croniter",
    "jsonschema_rs",  # a payload schema's validator: only for a type that declares one
    "aws_lambda_powertools.event_handler.api_gateway",
    "aws_lambda_powertools.event_handler.openapi.models",
)

_COLD_ENQUEUE = """
import json, sys
from pathlib import Path
from shared.jobs import job_types
job_types.declarations_path = Path(sys.argv[2])  # as in the code asset, where the synth writes it
import functions.api.handler as api
forbidden = json.loads(sys.argv[1])
loaded_at_import = sorted(name for name in forbidden if name in sys.modules)
import boto3
from moto import mock_aws
from local.events import FakeLambdaContext, http_api_event
from shared import settings
from shared.store import table_schema
from shared.tenants import tenants
with mock_aws():
    boto3.client("dynamodb").create_table(**table_schema.create_table_params())
    from shared import environment
    environment.change(queue_url=boto3.client("sqs").create_queue(QueueName=settings.QUEUE_NAME)["QueueUrl"])
    key = tenants.create_key("acme")
    def call(method, path, body=None):
        return api.handler(http_api_event(method, path, body, key), FakeLambdaContext())
    answers = [
        call("POST", "/v1/jobs", {"type": "echo", "payload": {"n": 1}, "max_attempts": 2}),
        call("POST", "/v1/jobs:batch", {"jobs": [{"type": "echo"}, {"type": "echo", "idempotency_key": "k"}]}),
    ]
    answers.append(call("GET", "/v1/jobs/" + json.loads(answers[0]["body"])["id"]))
    # Plain, valid bodies are checked without pydantic-core; it validates everything else.
    plain_path = sorted(name for name in [*forbidden, "pydantic_core"] if name in sys.modules)
    answers += [
        call("POST", "/v1/jobs:batch", {"jobs": [{"type": "echo"}, {"type": ""}]}),
        call("POST", "/v1/jobs", {"type": "nope"}),
        call("POST", "/v1/jobs", {"type": "sleep", "payload": {"seconds": 10**6}}),
    ]
print(json.dumps({
    "plain_path": plain_path,
    "statuses": [answer["statusCode"] for answer in answers],
    "at_import": loaded_at_import,
    "after_enqueue": sorted(name for name in forbidden if name in sys.modules),
}))
"""


def test_a_cold_start_and_its_first_enqueues_load_nothing_only_other_routes_need(tmp_path: Path) -> None:
    declarations = tmp_path / job_types.DECLARATIONS_FILE
    declarations.write_text(json.dumps(job_types.declarations()))
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        **FunctionEnv(table=corral_settings.TABLE_NAME).as_environment(),
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    out = subprocess.run(
        [sys.executable, "-c", _COLD_ENQUEUE, json.dumps(NOT_ON_THE_ENQUEUE_PATH), str(declarations)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["statuses"] == [202, 202, 200, 207, 422, 422]
    assert found["plain_path"] == []
    assert found["at_import"] == []
    assert found["after_enqueue"] == []


def test_the_enqueue_routes_validate_with_the_models_own_schemas() -> None:
    from functions.api.jobs import core_schemas

    generated = {"JOB_IN": job_schemas.JOB_IN, "JOBS_BATCH_IN": job_schemas.JOBS_BATCH_IN}
    # Compared as JSON text: the fields' order is the order their problems are reported in.
    assert json.dumps(core_schemas()) == json.dumps(generated), (
        "regenerate: python -m functions.api.jobs > functions/api/job_schemas.py && ruff format it"
    )


def test_a_job_spec_in_the_api_is_the_domains_job_spec_field_for_field() -> None:
    from functions.api.models import JobSpecIn
    from shared.jobs.enqueue import JobRequest
    from shared.model.spec import JobSpec

    assert list(JobSpecIn.model_fields) == [field.name for field in dataclasses.fields(JobSpec)]
    given = JobSpecIn(type="echo", payload={"n": 1}, max_attempts=2, timeout_seconds=30)
    assert given.spec() == JobSpec("echo", {"n": 1}, 2, 30)
    body = {**given.model_dump(), "idempotency_key": "k", "delay_seconds": 5}
    assert JobRequest.from_fields(body) == JobRequest(given.spec(), idempotency_key="k", delay_seconds=5)


# --- the enqueue routes and the resolver's routes answer alike ---


@pytest.fixture
def both(aws: dict[str, Any]) -> Any:
    """Send one request through the handler (enqueue routes) and through the resolver; both answers."""
    from functions.api import resolver
    from functions.api.handler import handler

    key = tenants.create_key("acme")

    def send(method: str, path: str, text: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        event = http_api_event(method, path, None, key)
        event["body"] = text
        fast = handler(event, FakeLambdaContext())
        from functions.api import body

        checked = body.check(event) if text is not None else body.CheckedBody(event)
        if isinstance(checked, body.BodyProblem):  # answered before any route: the same for both
            return fast, fast
        resolver.app.append_context(tenant="acme")
        slow = resolver.app.resolve(checked.event, FakeLambdaContext())
        return fast, slow

    return send


def _comparable(answer: dict[str, Any]) -> tuple[int, Any]:
    body = json.loads(answer["body"])
    for result in [body, *body.get("results", [])] if isinstance(body, dict) else []:
        if "id" in result:
            result["id"] = "<minted>"  # two enqueues of the same job mint two ids
    assert answer["headers"]["Content-Type"].startswith("application/json")
    return answer["statusCode"], body


_FIXED_BODIES = [
    None,
    "null",
    "[]",
    "[{}]",
    '[{"type": "echo"}]',
    '"text"',
    "42",
    "{}",
    '{"type": ""}',
    '{"type": "x" , "extra": 1}',
    '{"type": "echo", "max_attempts": "three", "run_at": "yesterday", "delay_seconds": -1}',
    '{"type": "echo", "max_attempts": 2.5, "timeout_seconds": true}',
    '{"type": "echo", "max_attempts": "3", "idempotency_key": ""}',
    '{"type": "echo", "run_at": "2026-01-01T00:00:00", "delay_seconds": 5}',
    '{"type": "echo", "run_at": "2026-01-01"}',
    '{"type": "echo", "payload": {"a": [1, 2, {"b": null}]}, "idempotency_key": "k1"}',
    '{"type": "unknown-type"}',
    '{"type": "sleep", "payload": {"seconds": 100000}}',
    '{"jobs": []}',
    '{"jobs": "x"}',
    '{"jobs": [1, {"type": "echo"}, {"type": "echo", "bogus": 1}, null]}',
    '{"jobs": [{"type": "echo"}], "more": true}',
    # at the edges of what the enqueue routes take as plain, without pydantic-core
    '{"type": "\\ud800"}',
    '{"type": "echo", "idempotency_key": "\\udfff"}',
    '{"type": "echo", "max_attempts": 25, "timeout_seconds": 900, "delay_seconds": 0}',
    '{"type": "echo", "max_attempts": 26}',
    '{"type": "echo", "max_attempts": 100000000000000000000000000000}',
    '{"type": "echo", "max_attempts": 1.0}',
    '{"type": "' + "e" * 64 + '"}',
    '{"type": "echo", "idempotency_key": "' + "k" * 255 + '"}',
    '{"type": "echo", "idempotency_key": "' + "k" * 256 + '"}',
    '{"type": "echo", "payload": null, "run_at": null, "idempotency_key": null}',
    json.dumps({"jobs": [{"type": "echo"}] * 100}),
    json.dumps({"jobs": [{"type": "echo"}] * 101}),
]


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/jobs:batch"])
@pytest.mark.parametrize("text", _FIXED_BODIES)
def test_both_paths_answer_a_body_alike(both: Any, path: str, text: str | None) -> None:
    fast, slow = both("POST", path, text)
    assert _comparable(fast) == _comparable(slow)


@pytest.mark.parametrize("job_id", ["jt" + "a" * 50, "x", "a" * 128, "a" * 129, "a.b~c-d_e"])
def test_both_paths_answer_a_status_read_alike(both: Any, job_id: str) -> None:
    fast, slow = both("GET", f"/v1/jobs/{job_id}", None)
    assert _comparable(fast) == _comparable(slow)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_field_values = st.one_of(_json, st.text(max_size=70), st.sampled_from(["echo", "2026-01-01T00:00:00Z", "", "1"]))
_job_fields = st.sampled_from(
    ["type", "payload", "max_attempts", "timeout_seconds", "idempotency_key", "delay_seconds", "run_at", "other"]
)
_jobs = st.dictionaries(_job_fields, _field_values, max_size=5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(job=_jobs | _json, batch=st.lists(_jobs | _json, max_size=4))
def test_both_paths_answer_generated_bodies_alike(both: Any, job: Any, batch: list[Any]) -> None:
    for path, value in (("/v1/jobs", job), ("/v1/jobs:batch", {"jobs": batch}), ("/v1/jobs:batch", job)):
        fast, slow = both("POST", path, json.dumps(value))
        assert _comparable(fast) == _comparable(slow), value
