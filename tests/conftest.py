from __future__ import annotations

from collections.abc import Iterator

import pytest

from local.deploy import create_api_key
from tests.platform import Platform, platform


@pytest.fixture(scope="session")
def deployed() -> Iterator[Platform]:
    """The stack, deployed once per test session (see tests/platform.py)."""
    with platform() as running:
        yield running


@pytest.fixture(scope="session")
def api(deployed: Platform):
    return deployed.client()


@pytest.fixture(scope="session")
def other_tenant_api(deployed: Platform):
    deployed.require_aws()  # a second tenant's key is written straight into the table
    return deployed.client(create_api_key(deployed.aws_env, "other-tenant", label="tests"))
