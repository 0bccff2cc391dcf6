"""Lambda code and dependencies, built without Docker.

Dependencies go into a layer built by `pip install --target` for the Lambda
platform (manylinux x86_64, the runtime's CPython), rebuilt only when
functions/requirements.txt changes. The function code asset is a copy of
functions/ and shared/, staged on every synth (it is small), plus the dashboard's front-end
libraries, copied from node_modules (installed by `npm ci` from package-lock.json) into
functions/api/dashboard/vendor/: the API function serves them, so no CDN is used at run time.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / ".corral" / "build"
REQUIREMENTS = ROOT / "functions" / "requirements.txt"
PYTHON_VERSION = "3.11"  # must match the Lambda runtime in infra/functions.py
_CODE_PACKAGES = ("functions", "shared")
# Pure-Python requirements published only as source: pip cannot build a source distribution
# for another platform, so they are built into (platform-independent) wheels first.
_SOURCE_ONLY = ("amazon-dax-client",)
NODE_MODULES = ROOT / "node_modules"
DASHBOARD_VENDOR_DIR = Path("functions") / "api" / "dashboard" / "vendor"
# node_modules path -> file name served at /dashboard/<name> (pinned in package.json; MIT licences).
DASHBOARD_VENDOR = {
    "preact/dist/preact.mjs": "preact.mjs",
    "preact/hooks/dist/hooks.mjs": "hooks.mjs",
    "uplot/dist/uPlot.esm.js": "uPlot.esm.js",
    "uplot/dist/uPlot.min.css": "uPlot.min.css",
    "cronstrue/dist/cronstrue.min.js": "cronstrue.min.js",
}


def dependencies_layer_dir() -> Path:
    """A directory holding python/<packages>, as a Lambda layer wants it."""
    target = BUILD / "layer"
    stamp = target / ".requirements.sha256"
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return target
    shutil.rmtree(target, ignore_errors=True)
    (target / "python").mkdir(parents=True)
    wheels = _source_only_wheels()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--requirement",
            str(REQUIREMENTS),
            "--target",
            str(target / "python"),
            "--platform",
            "manylinux2014_x86_64",
            "--implementation",
            "cp",
            "--python-version",
            PYTHON_VERSION,
            "--only-binary=:all:",
            "--find-links",
            str(wheels),
        ],
        check=True,
    )
    stamp.write_text(digest)
    return target


def _source_only_wheels() -> Path:
    wheels = BUILD / "wheels"
    pins = [
        line.strip()
        for line in REQUIREMENTS.read_text().splitlines()
        if line.split("==", 1)[0].strip().lower() in _SOURCE_ONLY
    ]
    if pins:
        build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps"]
        subprocess.run([*build, "--wheel-dir", str(wheels), *pins], check=True)
    return wheels


def code_dir() -> Path:
    target = BUILD / "code"
    shutil.rmtree(target, ignore_errors=True)
    for package in _CODE_PACKAGES:
        shutil.copytree(
            ROOT / package,
            target / package,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "requirements*.txt", "vendor"),
        )
    vendor_dashboard(target / DASHBOARD_VENDOR_DIR)
    return target


def vendor_dashboard(target: Path) -> None:
    """The dashboard's front-end libraries, from node_modules, with their licences beside them."""
    missing = [source for source in DASHBOARD_VENDOR if not (NODE_MODULES / source).is_file()]
    if missing:
        raise SystemExit(f"dashboard libraries missing from node_modules ({', '.join(missing)}); run `make install`")
    target.mkdir(parents=True, exist_ok=True)
    for source, name in DASHBOARD_VENDOR.items():
        shutil.copyfile(NODE_MODULES / source, target / name)
    for package in sorted({source.split("/", 1)[0] for source in DASHBOARD_VENDOR}):
        shutil.copyfile(NODE_MODULES / package / "LICENSE", target / f"LICENSE.{package}.txt")
