"""Lambda code and dependencies, built without Docker.

Dependencies go into a layer built by `pip install --target` for the Lambda
platform (manylinux x86_64, the runtime's CPython), rebuilt only when
functions/requirements.txt or its lock changes. The platform's layer installs the lock
(functions/requirements.lock: the whole closure, each file pinned by its sha256) with
`--require-hashes`, so every machine bundles the same bytes; a customer job package's requirements get a
layer of its own (jobs_layer_dir). Two code assets, staged on every synth (they are small):
the API's and the worker's, a copy of functions/, shared/, corral_jobs/ and the profile's test
tooling packages (code_dir); the jobs function's, its handler, shared/, corral_jobs/ and the
customer's job packages (jobs_code_dir).

Both carry their bytecode, compiled here: a function's code and layers are read-only, so without
it every cold start compiles every module it imports, and a timestamp-checked .pyc is stale once
the asset's zip has rewritten the files' times, so they are compiled unchecked-hash (valid whatever
the file times; the asset is rebuilt whenever its sources change).
The API's dashboard is bundled into it too:
esbuild (pinned in package.json, installed by `npm ci`) bundles its modules and the front-end
libraries they import from node_modules into one app.js and one app.css, which the API
function serves (no CDN at run time, four requests per page load).
"""

from __future__ import annotations

import compileall
import hashlib
import py_compile
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / ".corral" / "build"
REQUIREMENTS = ROOT / "functions" / "requirements.txt"
LOCK = ROOT / "functions" / "requirements.lock"  # REQUIREMENTS' closure with hashes (pip-compile)
PYTHON_VERSION = "3.11"  # must match the Lambda runtime in infra/functions.py
_CODE_PACKAGES = ("functions", "shared", "corral_jobs")
BYTECODE_MARKER = ".bytecode"
# Pure-Python requirements published only as source: pip cannot build a source distribution
# for another platform, so they are built into (platform-independent) wheels first.
_SOURCE_ONLY = ("amazon-dax-client",)
NODE_MODULES = ROOT / "node_modules"
DASHBOARD = Path("functions") / "api" / "dashboard"
DASHBOARD_ENTRY = DASHBOARD / "src" / "app.js"
DASHBOARD_BUILD = DASHBOARD / "build"  # what functions/api/dashboard_files.py serves, beside index.html
DASHBOARD_LIBRARIES = ("preact", "uplot", "cronstrue")  # MIT; their licences ship beside the bundle


# The AWS services the functions call (shared/, functions/): the API models a trimmed layer keeps.
PLATFORM_AWS_SERVICES = ("sqs", "dynamodb", "scheduler", "lambda", "cloudwatch", "logs", "sts", "sso", "sso-oidc")


def dependencies_layer_dir(aws_services: tuple[str, ...] | None = None) -> Path:
    """A directory holding python/<packages>, as a Lambda layer wants it.

    `aws_services`: keep botocore's API models for these services (and the platform's) only. They
    are about half of the layer's files (~2,000 of ~4,400, 28 of 34 MB), which the embedded
    emulator deletes and re-extracts on every cold start of every environment; None keeps them all
    (AWS: a customer's job may call any service).
    """
    full = _layer(LOCK, BUILD / "layer", hashed=True)
    return full if aws_services is None else _trimmed(full, {*PLATFORM_AWS_SERVICES, *aws_services})


def _trimmed(full: Path, services: set[str]) -> Path:
    target = BUILD / "layer-trimmed"
    stamp = target / ".services"
    wanted = ",".join(sorted(services)) + ":" + (full / ".requirements.sha256").read_text()
    if stamp.exists() and stamp.read_text() == wanted:
        return target
    shutil.rmtree(target, ignore_errors=True)
    models = full / "python" / "botocore" / "data"

    def skip(directory: str, names: list[str]) -> set[str]:
        if Path(directory) != models:
            return set()
        return {name for name in names if (models / name).is_dir() and name not in services}

    shutil.copytree(full, target, ignore=skip)
    stamp.write_text(wanted)
    return target


def jobs_layer_dir(requirements: Path) -> Path:
    """The customer job package's requirements, in a layer of their own.

    Its own layer and stamp: changing the customer's requirements does not rebuild the platform's
    (boto3, Powertools, pydantic: the slow part), nor the reverse. The platform's pins are
    constraints, so a customer requirement that needs another version of one fails here, at
    synth, not as two versions of a package in /opt/python.
    """
    return _layer(requirements, BUILD / "jobs-layers" / requirements.parent.name, constraints=REQUIREMENTS)


def _layer(requirements: Path, target: Path, constraints: Path | None = None, *, hashed: bool = False) -> Path:
    """`hashed`: `requirements` is a lock pinning every file by its hash (pip's hash-checking mode)."""
    stamp = target / ".requirements.sha256"
    digest = hashlib.sha256(requirements.read_bytes() + (constraints.read_bytes() if constraints else b"")).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        compile_bytecode(target / "python")  # once: a layer built before the layers carried bytecode
        return target
    shutil.rmtree(target, ignore_errors=True)
    (target / "python").mkdir(parents=True)
    platform = [
        "--target",
        str(target / "python"),
        "--platform",
        "manylinux2014_x86_64",
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
    ]
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if hashed:
        # The source-only pins are built into wheels from their hash-checked sources and installed after
        # the rest, without dependencies (the lock's other lines hold them); the rest are hash-checked.
        source_only, binary = _split_source_only(requirements, target)
        subprocess.run(
            [*install, "--require-hashes", "--requirement", str(binary), *platform, "--only-binary=:all:"], check=True
        )
        wheels = _source_only_wheels(source_only)
        built = sorted(wheels.glob("*.whl"))
        if built:
            subprocess.run([*install, "--no-deps", *platform, *map(str, built)], check=True)
    else:
        subprocess.run(
            [
                *install,
                "--requirement",
                str(requirements),
                *(["--constraint", str(constraints)] if constraints else []),
                *platform,
                "--only-binary=:all:",
                "--find-links",
                str(_source_only_wheels(None)),
            ],
            check=True,
        )
    compile_bytecode(target / "python")
    stamp.write_text(digest)
    return target


def _split_source_only(lock: Path, target: Path) -> tuple[Path, Path]:
    """The lock's source-only entries and the rest, each a requirements file of its own (next to the layer)."""
    entries = _lock_entries(lock.read_text())
    source_only = [entry for name, entry in entries if name in _SOURCE_ONLY]
    binary = [entry for name, entry in entries if name not in _SOURCE_ONLY]
    (target / "source-only.txt").write_text("".join(source_only))
    (target / "binary.txt").write_text("".join(binary))
    return target / "source-only.txt", target / "binary.txt"


def _lock_entries(text: str) -> list[tuple[str, str]]:
    """(normalised name, its lines) of each pin of a pip-compile lock; comments dropped."""
    entries: list[tuple[str, str]] = []
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or line.startswith("-"):
            continue  # a comment, or an option line (an index) this machine's pip.conf already gives
        if line[0].isspace() and entries:
            name, lines = entries[-1]
            entries[-1] = (name, lines + line)
        else:
            entries.append((stripped.split("==", 1)[0].lower(), line))
    return entries


def compile_bytecode(directory: Path) -> None:
    """Every module's .pyc, for the runtime's Python (a synth on another Python leaves the sources alone)."""
    marker = directory / BYTECODE_MARKER
    if marker.exists() or sys.version_info[:2] != tuple(int(part) for part in PYTHON_VERSION.split(".")):
        return
    compileall.compile_dir(
        directory,
        quiet=2,
        force=True,
        workers=0,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    marker.write_text("unchecked-hash bytecode for CPython " + PYTHON_VERSION)


def _source_only_wheels(hashed: Path | None) -> Path:
    """Wheels of the source-only pins: from `hashed` (a requirements file with their hashes: the sources
    are checked before they are built), or from functions/requirements.txt's pins."""
    wheels = BUILD / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps"]
    if hashed is not None:
        shutil.rmtree(wheels, ignore_errors=True)
        if hashed.read_text().strip():
            subprocess.run(
                [*build, "--require-hashes", "--wheel-dir", str(wheels), "--requirement", str(hashed)], check=True
            )
        return wheels
    pins = [
        line.strip()
        for line in REQUIREMENTS.read_text().splitlines()
        if line.split("==", 1)[0].strip().lower() in _SOURCE_ONLY
    ]
    if pins:
        subprocess.run([*build, "--wheel-dir", str(wheels), *pins], check=True)
    return wheels


def code_dir(jobs_packages: Sequence[Path] = ()) -> Path:
    """The API's and the worker's asset: functions/, shared/ and corral_jobs/, and the job packages
    that run in the worker (each under its own folder name)."""
    target = BUILD / "code"
    _stage(target, [*(ROOT / package for package in _CODE_PACKAGES), *jobs_packages])
    build_dashboard(target / DASHBOARD_BUILD)
    compile_bytecode(target)
    return target


def jobs_code_dir(jobs_packages: Sequence[Path]) -> Path:
    """The jobs function's asset: its handler, shared/ and corral_jobs/ (what a job package imports),
    and the customer's job packages. Not the API's or the worker's handlers, nor the dashboard."""
    target = BUILD / "jobs-code"
    _stage(target, [ROOT / "shared", ROOT / "corral_jobs", *jobs_packages])
    (target / "functions").mkdir()
    shutil.copyfile(ROOT / "functions" / "__init__.py", target / "functions" / "__init__.py")
    shutil.copytree(ROOT / "functions" / "jobs", target / "functions" / "jobs", ignore=_IGNORED)
    compile_bytecode(target)
    return target


_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "requirements*.txt", "tests", "src", "build")


def _stage(target: Path, sources: Sequence[Path]) -> None:
    shutil.rmtree(target, ignore_errors=True)
    for source in sources:
        shutil.copytree(source, target / source.name, ignore=_IGNORED)


def build_dashboard(target: Path) -> Path:
    """The dashboard's app.js and app.css (minified ES module, no eval), with the libraries' licences."""
    esbuild = NODE_MODULES / ".bin" / "esbuild"
    if not esbuild.exists():
        raise SystemExit("esbuild is missing from node_modules; run `make install`")
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(
        [
            str(esbuild),
            str(ROOT / DASHBOARD_ENTRY),
            "--bundle",
            "--minify",
            "--format=esm",
            "--target=es2020",
            "--legal-comments=none",  # the licences are copied whole, below
            "--log-level=warning",
            f"--outdir={target}",
        ],
        check=True,
    )
    for package in DASHBOARD_LIBRARIES:
        shutil.copyfile(NODE_MODULES / package / "LICENSE", target / f"LICENSE.{package}.txt")
    return target
