"""`make footprint`: the component kinds each profile deploys, against a budget of 9 (BUDGET).

A component kind is something an operator runs and pays for (API, functions, queue, DLQ,
table, cache, scheduler, network, alarms); IAM roles, log groups, permissions, security
groups, endpoints, NAT gateways and the like are the plumbing of those and are listed, not counted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

BUDGET = 9  # at most 9 deployed component kinds
PROFILES = ("aws", "local")

KIND_BY_TYPE = {
    "AWS::ApiGatewayV2::Api": "api",
    "AWS::Lambda::Function": "functions",
    "AWS::DynamoDB::GlobalTable": "table",
    "AWS::DynamoDB::Table": "table",
    "AWS::DAX::Cluster": "cache",
    "AWS::Scheduler::ScheduleGroup": "scheduler",
    "AWS::EC2::VPC": "network",
    "AWS::CloudWatch::Alarm": "alarms",
    "AWS::SNS::Topic": "alarms",  # where the alarms notify
}


def _dead_letter_targets(resources: dict[str, Any]) -> set[str]:
    targets = set()
    for resource in resources.values():
        redrive = resource.get("Properties", {}).get("RedrivePolicy", {})
        arn = redrive.get("deadLetterTargetArn", {})
        if isinstance(arn, dict) and "Fn::GetAtt" in arn:
            targets.add(arn["Fn::GetAtt"][0])
    return targets


def component_kinds(template: dict[str, Any]) -> dict[str, list[str]]:
    """kind -> logical ids of the resources that make it up."""
    resources = template.get("Resources", {})
    dead_letter_queues = _dead_letter_targets(resources)
    kinds: dict[str, list[str]] = defaultdict(list)
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::SQS::Queue":
            kinds["dlq" if logical_id in dead_letter_queues else "queue"].append(logical_id)
        elif resource["Type"] in KIND_BY_TYPE:
            kinds[KIND_BY_TYPE[resource["Type"]]].append(logical_id)
    return dict(kinds)


def plumbing(template: dict[str, Any]) -> dict[str, int]:
    """Resource types not counted as components, with how many of each."""
    counts: dict[str, int] = defaultdict(int)
    for resource in template.get("Resources", {}).values():
        if resource["Type"] not in KIND_BY_TYPE and resource["Type"] != "AWS::SQS::Queue":
            counts[resource["Type"]] += 1
    return dict(sorted(counts.items()))


def report(profile: str, template: dict[str, Any]) -> dict[str, Any]:
    kinds = component_kinds(template)
    return {
        "profile": profile,
        "components": len(kinds),
        "budget": BUDGET,
        "within_budget": len(kinds) <= BUDGET,
        "kinds": {kind: len(ids) for kind, ids in sorted(kinds.items())},
        "plumbing": plumbing(template),
    }


def _print(footprint: dict[str, Any]) -> None:
    verdict = "within" if footprint["within_budget"] else "OVER"
    print(f"profile {footprint['profile']}: {footprint['components']} component kinds ({verdict} budget of {BUDGET})")
    for kind, count in footprint["kinds"].items():
        print(f"  {kind:<10} {count} resource{'s' if count > 1 else ''}")
    supporting = ", ".join(f"{kind.removeprefix('AWS::')} x{n}" for kind, n in footprint["plumbing"].items())
    print(f"  plumbing (not counted): {supporting}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("profiles", nargs="*", help=f"profiles to synthesize (default: {' '.join(PROFILES)})")
    args = parser.parse_args()
    unknown = set(args.profiles) - set(PROFILES)
    if unknown:
        parser.error(f"unknown profile(s) {sorted(unknown)}; choose from {PROFILES}")
    from infra.synth import synth  # CDK is only needed here, not to classify a template

    footprints = []
    with tempfile.TemporaryDirectory(prefix="corral-footprint-") as outdir:
        for profile in args.profiles or PROFILES:
            footprints.append(report(profile, synth(profile, Path(outdir) / profile).template))
    if args.json:
        print(json.dumps(footprints, indent=2))
    else:
        for footprint in footprints:
            _print(footprint)
    return 0 if all(f["within_budget"] for f in footprints) else 1


if __name__ == "__main__":
    sys.exit(main())
