"""The embedded AWS: ministack in its own virtual environment, bound to 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from local.ministack_patch import REFUSED_EXIT_CODE

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".corral"
VENV = STATE / "ministack-venv"
REQUIREMENTS = Path(__file__).with_name("requirements-ministack.txt")
# The emulator runs from this launcher, which corrects eight of its behaviours toward AWS's and
# refuses any ministack but the one it was written for (docs/decisions/emulator-corrections.md).
# -P: the launcher's folder (local/, with its own ministack.py) must not shadow the ministack package.
PATCHED_LAUNCHER = Path(__file__).with_name("ministack_patch.py")
DEFAULT_PORT = 4566
# Idle execution environments stay this long (ministack's default: 300 s). The environments `make up`
# and the test/benchmark stacks pre-warm stand in for AWS's provisioned concurrency, which stays warm.
WARM_TTL_SECONDS = 3600

# What every AWS client pointed at the emulator needs.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
ACCOUNT = "000000000000"


def ensure_installed() -> Path:
    """Create the emulator's venv once; reinstall only when its requirements change."""
    return ensure_venv(VENV, REQUIREMENTS)


def ensure_venv(venv: Path, requirements: Path, *pip_options: str) -> Path:
    """A venv of its own for a tool the project runs but does not import (the emulator; `make
    compare`'s Celery), created once and reinstalled only when `requirements` change."""
    stamp = venv / ".requirements"
    wanted = requirements.read_text()
    if stamp.exists() and stamp.read_text() == wanted:
        return venv
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", *pip_options]
    subprocess.run([*pip, "-r", str(requirements)], check=True)
    stamp.write_text(wanted)
    return venv


@dataclass
class Ministack:
    port: int = DEFAULT_PORT
    log_path: Path = field(default_factory=lambda: STATE / "ministack.log")
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def tmp_dir(self) -> Path:
        """Where its Lambda subprocesses unpack code and layers (~60 MB each). ministack leaves them
        behind when a worker dies or is killed, so each emulator gets its own, removed at stop."""
        return self.log_path.parent / f"tmp-{self.port}"

    def env(self) -> dict[str, str]:
        """Environment for boto3/CDK clients that talk to this emulator."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint, "CDK_DEFAULT_ACCOUNT": ACCOUNT}

    def healthy(self) -> bool:
        try:
            return requests.get(f"{self.endpoint}/_ministack/health", timeout=1).ok
        except requests.RequestException:
            return False

    def start(self, timeout: float = 30) -> None:
        if self.healthy():
            raise RuntimeError(f"something already answers on {self.endpoint}; stop it or choose another port")
        ensure_installed()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [str(VENV / "bin" / "python"), "-P", str(PATCHED_LAUNCHER)],
            env={
                **os.environ,
                **CREDENTIALS,
                "BIND_HOST": "127.0.0.1",
                "GATEWAY_PORT": str(self.port),
                "LOG_LEVEL": "WARNING",
                "TMPDIR": str(self.tmp_dir),
                "LAMBDA_WARM_TTL_SECONDS": str(WARM_TTL_SECONDS),
            },
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its Lambda subprocesses die with its process group
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if self.process.returncode == REFUSED_EXIT_CODE:
                    refusal = self.log_path.read_text(errors="replace").strip().splitlines()[-1:]
                    raise RuntimeError(f"the emulator launcher refused to start: {' '.join(refusal)}")
                raise RuntimeError(f"ministack exited with {self.process.returncode}; see {self.log_path}")
            if self.healthy():
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"ministack did not become healthy in {timeout:.0f}s; see {self.log_path}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        group = os.getpgid(self.process.pid)
        os.killpg(group, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(group, signal.SIGKILL)
            self.process.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):  # Lambda subprocesses left in the group
            os.killpg(group, signal.SIGKILL)
        shutil.rmtree(self.tmp_dir, ignore_errors=True)


def worker_pids(emulator: str, function: str) -> list[int]:
    """Lambda subprocesses of `function` spawned by the emulator at `emulator` (found by their environment)."""
    port = emulator.rsplit(":", 1)[-1]
    wanted = {f"AWS_LAMBDA_FUNCTION_NAME={function}".encode(), f"GATEWAY_PORT={port}".encode()}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = set((entry / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue  # gone, or not ours
        if wanted <= environ:
            pids.append(int(entry.name))
    return pids
