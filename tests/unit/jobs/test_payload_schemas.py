"""Customer code is fenced out of the API: a type's payload schema is checked there, its `validate` on the worker.

The API holds the rights to read API keys, so it never imports a jobs package: it refuses a bad
payload with the type's JSON Schema, written into the declarations at synth, and a customer's
`validate` hook runs on the worker before the job's code, ending an invalid job dead.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from infra import jobs_package
from shared import settings
from shared.environment import FunctionEnv
from shared.errors import InvalidRequest
from shared.jobs import job_types, payload_schemas
from shared.jobs.enqueue import check_job
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.jobs import job_store
from shared.worker.delivery import Delivery
from tests.unit.worker_harness import work

ROOT = Path(__file__).resolve().parents[3]

RESIZE_PAYLOAD = {
    "type": "object",
    "properties": {
        "width": {"type": "integer", "minimum": 1, "maximum": 4096},
        "formats": {"type": "array", "items": {"enum": ["png", "webp"]}},
    },
    "required": ["width"],
    "additionalProperties": False,
}

# A jobs package whose Python validator refuses every payload: a job it accepted proves it never ran.
_CUSTOMER_MODULE = f"""
from corral_jobs import InvalidPayload, job_type


def _refuse_everything(payload):
    raise InvalidPayload("payload.width", "the customer's own code ran")


@job_type("resize", payload_schema={RESIZE_PAYLOAD!r}, validate=_refuse_everything)
def resize(payload, context):
    return payload
"""

# The synth's own step (infra/jobs_package.py `registry`): load the registry, print its declarations.
_SYNTH = "import json; from shared.jobs import job_types; print(json.dumps(job_types.declarations()))"

_API = """
import json, sys
from pathlib import Path
from shared.jobs import job_types
job_types.declarations_path = Path(sys.argv[1])  # as in the code asset, where the synth writes it
import functions.api.handler as api
import boto3
from moto import mock_aws
from local.events import FakeLambdaContext, http_api_event
from shared import environment, settings
from shared.store import table_schema
from shared.tenants import tenants
with mock_aws():
    boto3.client("dynamodb").create_table(**table_schema.create_table_params())
    sqs = boto3.client("sqs")
    def queue(name):
        url = sqs.create_queue(QueueName=name)["QueueUrl"]
        return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    (queue_url, queue_arn), (_, backstop_arn) = queue(settings.QUEUE_NAME), queue(settings.BACKSTOP_NAME)
    role = boto3.client("iam").create_role(RoleName=settings.SCHEDULER_ROLE_NAME, AssumeRolePolicyDocument="{}")
    boto3.client("scheduler").create_schedule_group(Name=settings.SCHEDULE_GROUP)
    environment.change(
        queue_url=queue_url, queue_arn=queue_arn, backstop_arn=backstop_arn, scheduler_role_arn=role["Role"]["Arn"]
    )
    key = tenants.create_key("acme")
    def call(method, path, body):
        answer = api.handler(http_api_event(method, path, body, key), FakeLambdaContext())
        return {"status": answer["statusCode"], "body": json.loads(answer["body"])}
    def schedule(name, payload):
        job = {"type": "resize", "payload": payload}
        return call("POST", "/v1/schedules", {"name": name, "expression": "rate(5 minutes)", "job": job})
    answers = {
        "good": call("POST", "/v1/jobs", {"type": "resize", "payload": {"width": 64, "formats": ["png"]}}),
        "too_narrow": call("POST", "/v1/jobs", {"type": "resize", "payload": {"width": 0}}),
        "bad_format": call("POST", "/v1/jobs", {"type": "resize", "payload": {"width": 8, "formats": ["png", "gif"]}}),
        "batch": call("POST", "/v1/jobs:batch", {"jobs": [
            {"type": "resize", "payload": {"width": 8}}, {"type": "resize", "payload": {"height": 8}}]}),
        "good_schedule": schedule("nightly", {"width": 64}),
        "bad_schedule": schedule("broken", {"width": "wide"}),
    }
print(json.dumps({
    "answers": answers,
    "customer_modules": sorted(name for name in sys.modules if name.split(".")[0] == "acme_media"),
    "resolver_loaded": "functions.api.resolver" in sys.modules,
    "registry_loaded": job_types._loaded,
}))
"""


def _environment(package_parent: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        # The package is importable here: the API does not import it because it never asks to.
        "PYTHONPATH": f"{ROOT}:{package_parent}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "PYTHONDONTWRITEBYTECODE": "1",
        **FunctionEnv(table=settings.TABLE_NAME, jobs_package="acme_media").as_environment(),
    }


def _run(code: str, *arguments: str, env: dict[str, str], cwd: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, *arguments], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_the_api_checks_a_customer_types_payload_schema_without_importing_its_module(tmp_path: Path) -> None:
    package = tmp_path / "acme_media"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "resize.py").write_text(_CUSTOMER_MODULE)
    env = _environment(tmp_path)
    declarations = json.loads(_run(_SYNTH, env=env, cwd=tmp_path))
    jobs_package.check_payload_schemas(declarations)
    (tmp_path / job_types.DECLARATIONS_FILE).write_text(json.dumps(declarations))

    found = json.loads(_run(_API, str(tmp_path / job_types.DECLARATIONS_FILE), env=env, cwd=tmp_path))

    assert found["customer_modules"] == []
    assert found["resolver_loaded"]  # the schedules' routes were answered too
    assert not found["registry_loaded"]
    answers = found["answers"]
    assert answers["good"]["status"] == 202  # the customer's validator, which refuses everything, did not run
    assert answers["good_schedule"]["status"] == 201
    assert answers["batch"]["status"] == 207
    assert [result["status"] for result in answers["batch"]["body"]["results"]] == ["queued", "rejected"]
    refusals = {
        name: (answers[name]["status"], answers[name]["body"]["fields"][0])
        for name in ("too_narrow", "bad_format", "bad_schedule")
    }
    assert refusals == {
        "too_narrow": (422, {"field": "payload.width", "message": "must be at least 1"}),
        "bad_format": (422, {"field": "payload.formats[1]", "message": 'must be one of ["png","webp"]'}),
        "bad_schedule": (422, {"field": "job.payload.width", "message": "must be of type integer"}),
    }


# --- enqueue-time checks in-process: a customer type registered here, as a package would -------------


def _refuse_everything(payload: Any) -> None:
    raise job_types.InvalidPayload("payload.width", "the customer's own code ran")


@job_types.job_type("unit_resize", payload_schema=RESIZE_PAYLOAD, validate=_refuse_everything)
def _resize(payload: Any, context: job_types.JobContext) -> Any:
    return payload


def _refusal(payload: Any, field_prefix: str = "") -> tuple[str, str] | None:
    try:
        check_job(JobSpec("unit_resize", payload), tenant="acme", field_prefix=field_prefix)
    except InvalidRequest as error:
        return error.field, error.message
    return None


def test_a_customer_types_declaration_carries_its_schema_and_never_its_validator() -> None:
    declared = job_types.declared("unit_resize")

    assert declared is not None and declared.payload_schema == RESIZE_PAYLOAD
    assert declared.validate is None
    assert job_types.lookup("unit_resize").validate is _refuse_everything  # the worker's registry keeps it
    assert _refusal({"width": 10}) is None


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


# --- no customer code in the API, whatever the declarations say ------------------------------------


def test_only_the_platforms_own_modules_register_a_built_in_type() -> None:
    def customer_function(payload: Any, context: job_types.JobContext) -> None:
        return None

    customer_function.__module__ = "acme_media.resize"
    with pytest.raises(ValueError, match="only the platform's own modules register built-in types"):
        job_types.builtin_job_type("unit_pretend_builtin")(customer_function)
    assert job_types.lookup("unit_pretend_builtin") is None


def test_a_declared_checker_outside_the_platforms_code_is_never_imported(tmp_path, monkeypatch) -> None:
    forged = {
        "name": "pretend_builtin",
        "builtin": True,
        "validator": "acme_media.resize:_refuse_everything",
        "tenant_check": None,
    }
    declarations = tmp_path / job_types.DECLARATIONS_FILE
    declarations.write_text(json.dumps([forged]))
    monkeypatch.setattr(job_types, "declarations_path", declarations)
    job_types._declared_at_synth.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="no checker outside the platform's code"):
            job_types.declared("pretend_builtin")
    finally:
        job_types._declared_at_synth.cache_clear()
    assert "acme_media" not in sys.modules


# --- the customer's validate runs on the worker ------------------------------------------------------

_ran: list[Any] = []


def _needs_a_name(payload: Any) -> None:
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
        raise job_types.InvalidPayload("payload.name", "must be the contact's name")


@job_types.job_type("unit_greet", validate=_needs_a_name)
def _greet(payload: Any, context: job_types.JobContext) -> str:
    _ran.append(payload)
    return f"hello {payload['name']}"


def _deliver(job_id: str, payload: Any) -> str:
    message = JobMessage(
        id=job_id, tenant="acme", type="unit_greet", payload=payload, max_attempts=3, enqueued_at=time.time()
    )
    return work(message, Delivery(message_id=f"m-{job_id}", body=message.to_json()))


def test_the_api_accepts_a_payload_only_the_customers_validator_refuses() -> None:
    check_job(JobSpec("unit_greet", {"nickname": 1}), tenant="acme")  # no schema, and its validate is not run here


def test_a_payload_the_customers_validator_refuses_ends_the_job_dead_before_its_code_runs(aws) -> None:
    _ran.clear()

    assert _deliver("jt-greet-bad", {"nickname": 1}) == "dead"

    record = job_store.get("jt-greet-bad")
    assert record.status is Status.DEAD
    assert record.attempts == 1  # no retry: the payload would be as invalid the next time
    assert record.error == "JobDead: invalid payload: payload.name: must be the contact's name"
    assert _ran == []


def test_a_payload_the_customers_validator_accepts_runs(aws) -> None:
    _ran.clear()

    assert _deliver("jt-greet-good", {"name": "Ada"}) == "succeeded"

    assert job_store.get("jt-greet-good").result == "hello Ada"
    assert _ran == [{"name": "Ada"}]
