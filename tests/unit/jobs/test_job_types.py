"""The job type registry: options, the customer's package as the bundle loads it, and enqueue-time checks."""

import time
from pathlib import Path

import pytest

from infra import bundling, jobs_package
from shared import environment
from shared.environment import FunctionEnv
from shared.errors import InvalidRequest
from shared.jobs import job_types
from shared.jobs.enqueue import JobRequest, build_message

EXAMPLE = bundling.ROOT / "examples" / "jobs"


def _package(tmp_path: Path, name: str, source: str) -> jobs_package.JobsPackage:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "jobs.py").write_text(source)
    return jobs_package.from_folder(str(folder))


def _registry(package: jobs_package.JobsPackage) -> list[dict]:
    """As the stack loads a customer's package at synth: from the jobs function's asset, beside the platform's."""
    layers = [bundling.dependencies_layer_dir()]
    if package.requirements:
        layers.append(bundling.jobs_layer_dir(package.requirements))
    code_dirs = [bundling.code_dir(), bundling.jobs_code_dir([package.path])]
    return jobs_package.registry(code_dirs, layers, [package])


def test_the_example_package_registers_its_types_with_their_options():
    types = {found["name"]: found for found in _registry(jobs_package.from_folder("examples/jobs"))}

    assert types["render_email"]["timeout_seconds"] == 30
    assert types["render_email"]["max_attempts"] == 2
    assert types["sync_contacts"]["backoff_base_seconds"] == 1
    assert not types["render_email"]["builtin"]
    assert types["render_email"]["payload_schema"]["required"] == ["markdown"]
    assert types["render_email"]["validator"] is None  # the API imports no customer module to check a job
    assert {"echo", "sleep", "fail", "lambda"} <= {name for name, found in types.items() if found["builtin"]}


def test_the_fence_benchmarks_package_loads_as_the_bundle_loads_it():
    """`make fence` deploys bench/fence_jobs beside the example (bench/scenarios/fence.py): its type must pass
    the synth."""
    types = {found["name"]: found for found in _registry(jobs_package.from_folder("bench/fence_jobs"))}

    assert not types["fence-invoke"]["builtin"]


def test_a_customer_type_named_like_a_builtin_fails_the_synth(tmp_path):
    package = _package(
        tmp_path,
        "acme_jobs",
        'from corral_jobs import job_type\n\n@job_type("echo")\ndef echo(payload, context):\n    return 1\n',
    )
    with pytest.raises(SystemExit, match="job type 'echo' is already a built-in type"):
        _registry(package)


def test_a_payload_schema_that_is_no_json_schema_fails_the_synth_naming_the_type(tmp_path):
    package = _package(
        tmp_path,
        "acme_jobs",
        "from corral_jobs import job_type\n\n"
        '@job_type("resize", payload_schema={"type": "picture"})\ndef resize(payload, context):\n    return 1\n',
    )
    with pytest.raises(SystemExit, match="job type 'resize': payload_schema is not a usable JSON Schema"):
        _registry(package)


def test_a_package_that_does_not_import_fails_the_synth(tmp_path):
    package = _package(tmp_path, "acme_jobs", "import no_such_library_anywhere\n")
    with pytest.raises(SystemExit, match="No module named 'no_such_library_anywhere'"):
        _registry(package)


@pytest.mark.parametrize("name", ["shared", "not-an-identifier"])
def test_a_package_folder_name_must_be_importable_and_not_the_platforms(tmp_path, name):
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    with pytest.raises(SystemExit, match="must be a Python identifier"):
        jobs_package.from_folder(str(tmp_path / name))


@pytest.mark.parametrize(
    "options",
    [
        {"timeout_seconds": 0},
        {"timeout_seconds": 901},
        {"timeout_seconds": 60, "max_timeout_seconds": 30},
        {"max_attempts": 26},
        {"backoff_base_seconds": 0},
        {"backoff_cap_seconds": 100_000},
    ],
)
def test_bad_options_are_refused_when_the_type_is_declared(options):
    with pytest.raises(ValueError, match="unit_bad"):
        job_types.job_type("unit_bad", **options)


def _request(**fields):
    return JobRequest.from_fields({"type": "sleep", **fields})


@job_types.job_type("unit_capped", timeout_seconds=10, max_timeout_seconds=60)
def _capped(payload, context):
    return None


def test_a_job_may_ask_for_a_timeout_up_to_its_types_maximum(aws):
    assert build_message("acme", _request(timeout_seconds=900), time.time()).timeout_seconds == 900
    assert build_message("acme", _request(type="unit_capped", timeout_seconds=60), time.time()).timeout_seconds == 60
    assert build_message("acme", _request(type="unit_capped"), time.time()).timeout_seconds is None  # the type's 10
    with pytest.raises(InvalidRequest, match="between 1 and 60") as error:
        build_message("acme", _request(type="unit_capped", timeout_seconds=61), time.time())
    assert error.value.field == "timeout_seconds"


def test_a_jobs_attempts_default_to_its_types(aws):
    assert build_message("acme", _request(), time.time()).max_attempts == 3
    assert build_message("acme", _request(max_attempts=7), time.time()).max_attempts == 7


def test_a_lambda_target_must_be_allowed_by_the_stack(aws, monkeypatch):
    environment.change(lambda_targets=("reports-*=acme", "arn:aws:lambda:eu-west-1:123456789012:function:etl=acme"))
    for allowed in ("reports-daily", "reports-daily:live", "arn:aws:lambda:eu-west-1:123456789012:function:etl:3"):
        build_message("acme", _request(type="lambda", payload={"function": allowed}), time.time())
    for refused in ("billing", "arn:aws:lambda:eu-west-1:999999999999:function:etl", "arn:aws:lambda:x:1:function:r"):
        with pytest.raises(InvalidRequest) as error:
            build_message("acme", _request(type="lambda", payload={"function": refused}), time.time())
        assert error.value.field == "payload.function"
    with pytest.raises(InvalidRequest) as error:
        build_message("acme", _request(type="lambda", payload={"function": "reports-x", "extra": 1}), time.time())
    assert error.value.field == "payload.extra"


def test_no_lambda_target_is_allowed_by_default(aws, monkeypatch):
    environment.change(lambda_targets=())
    with pytest.raises(InvalidRequest, match="not a Lambda target this stack allows"):
        build_message("acme", _request(type="lambda", payload={"function": "anything"}), time.time())


_DECLARED = """
import json, sys
from shared.jobs import job_types
from shared.errors import InvalidRequest
from shared.jobs.enqueue import check_job
from shared.model.spec import JobSpec
render = job_types.declared("render_email")
limits = {"timeout": render.timeout_seconds, "attempts": render.max_attempts, "known": job_types.declared_names()}
check_job(JobSpec("render_email", {"markdown": "# Hi"}, 2), tenant="acme")
try:
    check_job(JobSpec("render_email", {"markdown": 5}, 2), tenant="acme")
    refused = None
except InvalidRequest as error:
    refused = error.field
print(json.dumps({**limits, "refused": refused, "loaded": job_types._loaded,
                  "imported": any(name == "jobs" or name.startswith("jobs.") for name in sys.modules)}))
"""


def test_the_api_accepts_jobs_against_the_declarations_written_at_synth(tmp_path):
    """In the asset, a type's limits and payload schema come from job_types.json; its module is never imported."""
    import json
    import subprocess
    import sys

    package = jobs_package.from_folder("examples/jobs")
    declarations = _registry(package)
    code = bundling.BUILD / "code"  # the asset _registry built, where the registry wrote job_types.json
    assert json.loads((code / job_types.DECLARATIONS_FILE).read_text()) == declarations
    layers = [bundling.dependencies_layer_dir() / "python", bundling.jobs_layer_dir(package.requirements) / "python"]
    out = subprocess.run(
        [sys.executable, "-S", "-c", _DECLARED],
        cwd=code,
        env={
            "PYTHONPATH": ":".join(str(path) for path in [code, *layers]),
            "PATH": "/usr/bin:/bin",
            "PYTHONDONTWRITEBYTECODE": "1",
            **FunctionEnv(jobs_package=package.name).as_environment(),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout)
    assert (found["timeout"], found["attempts"]) == (30, 2)
    assert "render_email" in found["known"] and "echo" in found["known"]
    assert found["refused"] == "payload.markdown"  # by its payload schema, with the layer's jsonschema_rs
    assert not found["imported"] and not found["loaded"]  # no type's code, to read the limits or to validate
