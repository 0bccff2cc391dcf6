"""One synth per profile per test session (a synth costs ~5-15 s), with cdk.json's context and cdk-nag on; and
one of the aws profile with a customer's jobs package and Lambda targets."""

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


# Lambda targets for the synth with a customer's package: patterns of this account, another's ARN, a repeat.
TARGETS = "reports-*=acme|globex,arn:aws:lambda:eu-west-1:123456789012:function:etl=*,reports-*=initech"


@pytest.fixture(scope="session")
def with_jobs(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The aws profile with a customer's jobs package (the jobs function) and Lambda targets."""
    outdir: Path = tmp_path_factory.mktemp("cdk-jobs")
    context = {"corral:jobs": "examples/jobs", "corral:lambda_targets": TARGETS}
    return synth("aws", outdir, nag=True, context=context)


@pytest.fixture(scope="session")
def staged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synthesized]:
    """The aws profile in two stages, `prod` and `dev`."""
    outdir = tmp_path_factory.mktemp("stages")
    return {stage: synth("aws", outdir / stage, context={"corral:stage": stage}) for stage in ("prod", "dev")}
