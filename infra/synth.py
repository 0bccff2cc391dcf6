"""Synthesize the corral app in-process, with cdk.json's context (a bare cdk.App() would drop its feature flags).

Used by the footprint command and the infra tests; `npx cdk synth` reads cdk.json itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from shared import settings

ROOT = Path(__file__).resolve().parent.parent


def cdk_json_context() -> dict[str, Any]:
    return json.loads((ROOT / "cdk.json").read_text())["context"]


@dataclass(frozen=True)
class Synthesized:
    profile: str
    template: dict[str, Any]
    template_path: Path
    assembly_dir: Path


def app_for(profile: str, outdir: Path) -> cdk.App:
    return cdk.App(context={**cdk_json_context(), "corral:profile": profile}, outdir=str(outdir))


def synth(app: cdk.App) -> Synthesized:
    """Build the corral stack into `app` (from app_for) and synthesize it."""
    from app import build_app  # the CDK entry point, so tests synthesize exactly what `cdk deploy` does

    assembly = build_app(app).synth()
    stack = assembly.get_stack_by_name(settings.STACK_NAME)
    return Synthesized(
        profile=str(app.node.try_get_context("corral:profile")),
        template=stack.template,
        template_path=Path(stack.template_full_path),
        assembly_dir=Path(assembly.directory),
    )
