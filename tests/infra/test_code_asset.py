"""What the functions' code asset holds per profile: the fault tests' job types only where faults are injected.

`crash` kills its worker and `bloat` returns more than the store keeps; they are local/chaos_jobs, a
job package the local profile deploys. The aws profile's asset must not contain them at all: not
declared in its job_types.json, not registered by any module it ships.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from infra.synth import Synthesized
from shared import settings

FAULT_TEST_TYPES = {"crash", "bloat"}
_REGISTERS_A_FAULT_TEST_TYPE = re.compile(r"""job_type\(\s*["'](crash|bloat)["']""")


def _code_asset(synthesized: Synthesized) -> Path:
    """The staged folder of the one code asset the API and the worker share."""
    functions = [
        resource["Properties"]
        for resource in synthesized.template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        and resource["Properties"].get("FunctionName") in (settings.API_FUNCTION, settings.WORKER_FUNCTION)
    ]
    (key,) = {function["Code"]["S3Key"] for function in functions}
    return synthesized.template_path.parent / f"asset.{key.removesuffix('.zip')}"


def _declared(asset: Path) -> set[str]:
    return {entry["name"] for entry in json.loads((asset / "job_types.json").read_text())}


def _jobs_packages(synthesized: Synthesized) -> set[str]:
    return {
        resource["Properties"]["Environment"]["Variables"]["CORRAL_JOBS_PACKAGE"]
        for resource in synthesized.template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        and resource["Properties"].get("FunctionName") in (settings.API_FUNCTION, settings.WORKER_FUNCTION)
    }


def test_the_aws_code_asset_holds_no_fault_test_job_types(synthesized: dict[str, Synthesized]):
    asset = _code_asset(synthesized["aws"])
    assert {"echo", "sleep", "fail"} <= _declared(asset)
    assert not _declared(asset) & FAULT_TEST_TYPES
    registering = [
        str(path.relative_to(asset))
        for path in asset.rglob("*.py")
        if _REGISTERS_A_FAULT_TEST_TYPE.search(path.read_text(errors="replace"))
    ]
    assert registering == []
    assert not (asset / "chaos_jobs").exists()


def test_the_local_profile_deploys_the_fault_test_job_types_as_a_job_package(synthesized: dict[str, Synthesized]):
    asset = _code_asset(synthesized["local"])
    assert _declared(asset) >= FAULT_TEST_TYPES
    assert (asset / "chaos_jobs").is_dir()
    assert _jobs_packages(synthesized["local"]) == {"chaos_jobs"}
    assert _jobs_packages(synthesized["aws"]) == {""}
