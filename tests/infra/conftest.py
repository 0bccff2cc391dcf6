"""One synth per profile per test session (a synth costs ~5-15 s), with cdk.json's context and cdk-nag on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from infra.synth import Synthesized, synth

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synthesized]:
    outdir: Path = tmp_path_factory.mktemp("cdk")
    return {profile: synth(profile, outdir / profile, nag=True) for profile in ("aws", "local")}


@pytest.fixture(scope="session")
def aws_template(synthesized: dict[str, Synthesized]) -> Template:
    return Template.from_json(synthesized["aws"].template)


@pytest.fixture(scope="session")
def local_template(synthesized: dict[str, Synthesized]) -> Template:
    return Template.from_json(synthesized["local"].template)
