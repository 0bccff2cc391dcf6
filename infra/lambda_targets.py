"""The Lambda functions `lambda` jobs may invoke (`-c corral:lambda_targets=...`): the worker's IAM and the allowlist.

The same patterns go to the functions' environment (the API refuses any other target with a 422,
the worker checks again before invoking) and into the worker's policy, so IAM grants exactly
the allowed functions: nothing when the list is empty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import acknowledgements
from shared.targets import lambda_allowlist


@dataclass(frozen=True)
class LambdaTargets:
    patterns: tuple[str, ...]

    @classmethod
    def from_context(cls, raw: object) -> LambdaTargets:
        """A JSON list, or names/ARNs separated by commas."""
        if not raw:
            return cls(())
        if isinstance(raw, str):
            items = json.loads(raw) if raw.lstrip().startswith("[") else raw.split(",")
        else:
            items = list(raw)  # type: ignore[call-overload]
        try:
            return cls(tuple(lambda_allowlist.check_pattern(str(item).strip()) for item in items if str(item).strip()))
        except lambda_allowlist.BadPattern as error:
            raise SystemExit(f"corral:lambda_targets: {error}") from None

    def resources(self, stack: Stack) -> list[str]:
        """Each pattern as function ARNs: unqualified, and with any qualifier (alias or version)."""
        arns = []
        for pattern in self.patterns:
            arn = (
                pattern
                if pattern.startswith("arn:")
                else stack.format_arn(
                    service="lambda",
                    resource="function",
                    resource_name=pattern,
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            )
            arns += [arn, f"{arn}:*"]
        return arns

    def grant_invoke(self, scope: Construct, function: lambda_.Function) -> None:
        if not self.patterns:
            return
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=self.resources(Stack.of(scope)))
        )
        acknowledgements.lambda_targets(function, self.patterns)
