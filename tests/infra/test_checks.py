"""cfn-lint and cdk-nag on the synthesized templates, and `npx cdk synth` offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from infra.footprint import BUDGET, component_kinds
from infra.synth import ROOT, Synthesized

# W3005 (DependsOn already enforced by a Ref/GetAtt): aws-cdk-lib's Lambda construct writes
# DependsOn on the function's own role, which the function also references; harmless, and in
# generated code we do not own. Every other rule is on, warnings included.
CFN_LINT_IGNORED = ["W3005"]


def test_cfn_lint_is_clean_on_both_profiles(synthesized: dict[str, Synthesized]):
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    paths = [str(s.template_path) for s in synthesized.values()]
    result = subprocess.run(
        [str(cfn_lint), "--ignore-checks", *CFN_LINT_IGNORED, "--", *paths], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_cdk_nag_aws_solutions_and_serverless_are_clean_on_both_profiles(synthesized: dict[str, Synthesized]):
    # Acknowledged findings (infra/acknowledgements.py) carry their reason in code; anything else fails here.
    findings = {profile: s.nag_findings for profile, s in synthesized.items()}
    assert findings == {"aws": [], "local": []}


def test_footprint_is_within_the_seed_budget(synthesized: dict[str, Synthesized]):
    for profile, synthesized_profile in synthesized.items():
        kinds = component_kinds(synthesized_profile.template)
        assert len(kinds) <= BUDGET, (profile, sorted(kinds))
    assert {"api", "functions", "queue", "dlq", "table", "cache", "network", "alarms"} <= set(
        component_kinds(synthesized["aws"].template)
    )
    assert "cache" not in component_kinds(synthesized["local"].template)


def test_cdk_json_carries_every_recommended_feature_flag():
    import tarfile

    import aws_cdk

    jsii_dir = Path(aws_cdk.__file__).parent / "_jsii"
    (bundle,) = jsii_dir.glob("aws-cdk-lib@*.jsii.tgz")
    with tarfile.open(bundle) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("recommended-feature-flags.json"))
        recommended = json.load(archive.extractfile(member))
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    missing = {flag: value for flag, value in recommended.items() if context.get(flag) != value}
    assert missing == {}


def test_npx_cdk_synth_works_offline_without_notices_or_telemetry(tmp_path: Path):
    cdk_json = json.loads((ROOT / "cdk.json").read_text())
    assert cdk_json["notices"] is False
    dead_proxy = "http://127.0.0.1:9"  # any attempt to reach the network fails fast
    env = {
        **os.environ,
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "HTTP_PROXY": dead_proxy,
        "HTTPS_PROXY": dead_proxy,
        "NO_PROXY": "",
    }
    result = subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "cdk"), "synth", "--quiet", "--output", str(tmp_path / "out")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    template = json.loads((tmp_path / "out" / "corral.template.json").read_text())
    assert "AWS::DAX::Cluster" in {r["Type"] for r in template["Resources"].values()}  # cdk.json's default: aws
    assert "notices" not in result.stderr.lower()
