"""The Celery harness's own venv (.corral/celery-venv): built once, rebuilt when its requirements change.

Celery and kombu stay out of the project's .venv (nothing else needs them), as ministack stays in its
own (local/ministack.py `ensure_venv`).
"""

from __future__ import annotations

from pathlib import Path

from local.ministack import STATE, ensure_venv

VENV = STATE / "celery-venv"
REQUIREMENTS = Path(__file__).with_name("requirements-celery.txt")


def ensure_installed() -> Path:
    # pycurl from its wheel only: building it would need libcurl's headers.
    return ensure_venv(VENV, REQUIREMENTS, "--only-binary=pycurl")
