"""What the functions ship: bytecode valid in the deployed zip, and a trimmed layer with every API model they call."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from infra import bundling

_CLIENT_CALL = re.compile(r"""client\(\s*["']([a-z0-9-]+)["']""")


def test_the_trimmed_layer_keeps_every_service_model_the_platform_calls() -> None:
    called = {
        service
        for package in ("functions", "shared", "corral_jobs")
        for source in (bundling.ROOT / package).rglob("*.py")
        for service in _CLIENT_CALL.findall(source.read_text())
    }
    assert called <= set(bundling.PLATFORM_AWS_SERVICES), called - set(bundling.PLATFORM_AWS_SERVICES)
    layer = bundling.dependencies_layer_dir(("s3",)) / "python"
    check = (
        "import json, sys, botocore.session; session = botocore.session.get_session();"
        "print(json.dumps([session.get_service_model(name).service_name for name in json.loads(sys.argv[1])]))"
    )
    wanted = [*bundling.PLATFORM_AWS_SERVICES, "s3"]
    out = subprocess.run(
        [sys.executable, "-S", "-c", check, json.dumps(wanted)],
        env={"PYTHONPATH": str(layer), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(json.loads(out.stdout)) == len(wanted)
    assert not (layer / "botocore" / "data" / "ec2").exists()  # the point: most models are gone


def test_the_code_asset_carries_bytecode_valid_whatever_the_file_times() -> None:
    code = bundling.code_dir()
    compiled = list(code.rglob("__pycache__/*.cpython-311.pyc"))
    sources = [path for path in code.rglob("*.py")]
    assert len(compiled) == len(sources)
    flags = {int.from_bytes(path.read_bytes()[4:8], "little") for path in compiled}
    assert flags == {1}  # hash-based, unchecked (PEP 552): the zip's fixed times cannot make it stale


def _pins(text: str) -> dict[str, str]:
    return {
        name.lower(): version
        for name, version in re.findall(r"^([A-Za-z0-9._-]+)==([^\s\\]+)", text, flags=re.MULTILINE)
    }


def test_the_lock_pins_what_the_requirements_pin_each_file_by_its_hash() -> None:
    lock = bundling.LOCK.read_text()
    wanted = _pins(bundling.REQUIREMENTS.read_text())
    locked = _pins(lock)

    # Stale when functions/requirements.txt changed without the lock: regenerate it (its header says how).
    assert {name: locked.get(name) for name in wanted} == wanted
    for name, lines in bundling._lock_entries(lock):
        assert "--hash=sha256:" in lines, f"{name} has no hash"


def test_the_platform_layer_holds_exactly_the_locked_closure() -> None:
    layer = bundling.dependencies_layer_dir() / "python"
    installed = {
        re.sub(r"[-_.]+", "-", path.name.split("-")[0]).lower(): path.name.removesuffix(".dist-info").split("-")[1]
        for path in layer.glob("*.dist-info")
    }

    assert installed == {
        re.sub(r"[-_.]+", "-", name): version for name, version in _pins(bundling.LOCK.read_text()).items()
    }
