"""The Lambda functions `lambda` jobs may invoke (`-c corral:lambda_targets=...`): the worker's IAM and the allow-list.

Each entry names a function pattern and the tenants whose jobs may invoke it
(`reports-*=acme|globex`, `etl=*` for every tenant; shared/targets/lambda_allowlist.py). The entries
go to the functions' environment (the API refuses any other target, or another tenant's, with a
422; the worker checks again before invoking). IAM cannot tell tenants apart, so the worker's
policy grants the patterns of all entries together: nothing when the list is empty.

No pattern may match corral's own functions (the synth fails), and the policy denies the worker
invoking them, whatever else allows it: the stack's API and worker by name, and every function named
`corral-*-*` (the names CloudFormation gives the functions it names itself, `<stack>-<logical id>-<suffix>`).

The one function of corral's the worker may invoke is the jobs function (infra/jobs_function.py),
when the stack deploys one: allowed by its exact ARN, unqualified. It is named `corral-jobcode`, with
one hyphen, so the Deny's `corral-*-*` does not reach it, and a Deny beats any Allow; its versions and
aliases (`corral-jobcode:*`) are denied. The allow-list refuses it like any `corral-` name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import acknowledgements
from shared.settings import ResourceNames
from shared.targets import lambda_allowlist

# The Deny below names `corral-*-*`: a hyphen after the prefix would deny the worker its jobs function.
assert "-" not in ResourceNames("stage").jobs_function.removeprefix(lambda_allowlist.OWN_FUNCTION_PREFIX)
assert "-" not in ResourceNames().jobs_function.removeprefix(lambda_allowlist.OWN_FUNCTION_PREFIX)


@dataclass(frozen=True)
class LambdaTargets:
    entries: tuple[str, ...]  # `pattern=tenants`, as the functions' environment carries them

    @classmethod
    def from_context(cls, raw: object) -> LambdaTargets:
        """A JSON list of entries, or entries separated by commas."""
        if not raw:
            return cls(())
        if isinstance(raw, str):
            items = json.loads(raw) if raw.lstrip().startswith("[") else raw.split(",")
        else:
            items = list(raw)  # type: ignore[call-overload]
        try:
            entries = [lambda_allowlist.parse_entry(str(item)) for item in items if str(item).strip()]
        except lambda_allowlist.BadPattern as error:
            raise SystemExit(f"corral:lambda_targets: {error}") from None
        return cls(tuple(str(entry) for entry in entries))

    @property
    def patterns(self) -> tuple[str, ...]:
        """The function patterns of all entries, each once, in order."""
        return tuple(dict.fromkeys(entry.partition("=")[0] for entry in self.entries))

    def resources(self, stack: Stack) -> list[str]:
        """Each pattern as function ARNs: unqualified, and with any qualifier (alias or version)."""
        arns = []
        for pattern in self.patterns:
            arn = pattern if pattern.startswith("arn:") else _function_arn(stack, pattern)
            arns += [arn, f"{arn}:*"]
        return arns

    @staticmethod
    def own_functions(stack: Stack, names: ResourceNames) -> list[str]:
        """The stack's own functions, as the ARNs the worker is denied: the API and the worker, with
        any qualifier (this stack's names and the unstaged ones); every function with two hyphens after
        `corral` (every stage's, and the names CloudFormation generates: `corral-*-*`); and the jobs
        function's qualifiers (the worker invokes its unqualified ARN only). The jobs function's name has
        one hyphen (`corral-jobcode`, `corral-<stage>jobcode`), so the pattern leaves it to its Allow."""
        arns = []
        unstaged = ResourceNames()
        for name in dict.fromkeys(
            (names.api_function, names.worker_function, unstaged.api_function, unstaged.worker_function)
        ):
            arn = _function_arn(stack, name)
            arns += [arn, f"{arn}:*"]
        arns.append(_function_arn(stack, f"{lambda_allowlist.OWN_FUNCTION_PREFIX}*-*"))  # stages, CloudFormation's
        arns.append(_function_arn(stack, f"{names.jobs_function}:*"))
        return arns

    def grant_invoke(
        self, scope: Construct, worker: lambda_.Function, jobs_function: lambda_.Function | None, names: ResourceNames
    ) -> None:
        """The worker may invoke the allowed targets and the jobs function, and none of corral's other functions."""
        if not self.patterns and jobs_function is None:
            return  # nothing to invoke: no statement at all
        stack = Stack.of(scope)
        if self.patterns:
            worker.add_to_role_policy(
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=self.resources(stack))
            )
            acknowledgements.lambda_targets(worker, self.patterns)
        if jobs_function is not None:
            worker.add_to_role_policy(
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[jobs_function.function_arn])
            )
        worker.add_to_role_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY, actions=["lambda:InvokeFunction"], resources=self.own_functions(stack, names)
            )
        )


def _function_arn(stack: Stack, name: str) -> str:
    return stack.format_arn(
        service="lambda", resource="function", resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
    )
