"""The Celery harness's own venv (.corral/celery-venv): built once, rebuilt when its requirements change.

Celery and kombu stay out of the project's .venv (nothing else needs them), as ministack stays in its
own (local/ministack.py `ensure_installed`, which this follows).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from local.ministack import STATE

VENV = STATE / "celery-venv"
REQUIREMENTS = Path(__file__).with_name("requirements-celery.txt")


def ensure_installed() -> Path:
    stamp = VENV / ".requirements"
    wanted = REQUIREMENTS.read_text()
    if stamp.exists() and stamp.read_text() == wanted:
        return VENV
    subprocess.run(["python3", "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
    # pycurl from its wheel only: building it would need libcurl's headers.
    subprocess.run([*pip, "--only-binary=pycurl", "-r", str(REQUIREMENTS)], check=True)
    stamp.write_text(wanted)
    return VENV
