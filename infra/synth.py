"""Synthesize the corral app in-process, with cdk.json's context (a bare cdk.App() would drop its feature flags).

Used by the footprint command and the infra tests; `npx cdk synth` reads cdk.json itself.
With `nag=True` cdk-nag's AwsSolutions and Serverless packs run as a CDK validation plugin: its findings
come back as a list (empty when clean) instead of failing the synth, so the template is
still there to inspect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from infra.app import build_app  # what the CDK entry point (app.py) builds
from shared import settings

ROOT = Path(__file__).resolve().parent.parent
VALIDATION_REPORT = "validation-report.json"


def cdk_json_context() -> dict[str, Any]:
    return json.loads((ROOT / "cdk.json").read_text())["context"]


@dataclass(frozen=True)
class Synthesized:
    profile: str
    template: dict[str, Any]
    template_path: Path
    nag_findings: list[str]  # "<rule> at <construct path>", empty when clean


def synth(profile: str, outdir: Path, *, nag: bool = False, context: dict[str, Any] | None = None) -> Synthesized:
    app = cdk.App(context={**cdk_json_context(), "corral:profile": profile, **(context or {})}, outdir=str(outdir))
    if nag:
        from cdk_nag import AwsSolutionsChecks, ServerlessChecks

        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app))
    try:
        build_app(app).synth()
    except RuntimeError as error:  # jsii's wrapper of the CLI's ValidationFailed
        if "ValidationFailed" not in str(error):
            raise
    stack = settings.names(str(app.node.try_get_context("corral:stage") or "")).stack
    template_path = outdir / f"{stack}.template.json"
    return Synthesized(
        profile=profile,
        template=json.loads(template_path.read_text()),
        template_path=template_path,
        nag_findings=_findings(outdir / VALIDATION_REPORT),
    )


def _findings(report_path: Path) -> list[str]:
    if not report_path.exists():
        return []
    report = json.loads(report_path.read_text())
    return [
        f"{violation['ruleName']} at {construct['constructPath']}: {violation['description']}"
        for plugin in report.get("pluginReports", [])
        for violation in plugin.get("violations", [])
        for construct in violation.get("violatingConstructs", [])
    ]
