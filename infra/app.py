"""The corral CDK app: one CorralStack, configured from the app's context (`-c corral:...`).

`app.py` at the project root (cdk.json's entry point) and infra/synth.py both build it here, so an
in-process synth is exactly what `cdk deploy` deploys.
"""

from __future__ import annotations

import aws_cdk as cdk

from infra import jobs_package
from infra.lambda_targets import LambdaTargets
from infra.stack import CorralStack, function_env_from_context, profile_from_context, receive_budget_from_context
from shared import settings


def build_app(app: cdk.App) -> cdk.App:
    profile = profile_from_context(app.node.try_get_context("corral:profile"))
    profile = receive_budget_from_context(app.node.try_get_context("corral:receive_budget"), profile)
    names = names_from_context(app.node.try_get_context("corral:stage"))
    CorralStack(
        app,
        names.stack,
        names=names,
        profile=profile,
        # On AWS a `cdk destroy` (or a console click) does not delete the stack until this is turned off.
        termination_protection=profile.production,
        extra_function_env=function_env_from_context(app.node.try_get_context("corral:function_env")),
        jobs=jobs_package.from_context(app.node.try_get_context("corral:jobs"), profile.name),
        lambda_targets=LambdaTargets.from_context(app.node.try_get_context("corral:lambda_targets")),
        description="corral: serverless background jobs (API -> SQS -> Lambda workers -> DynamoDB)",
    )
    return app


def names_from_context(raw: object) -> settings.ResourceNames:
    """`-c corral:stage=prod`: the stage whose prefix every physical name carries (none: the unstaged names)."""
    try:
        return settings.names(str(raw or ""))
    except ValueError as error:
        raise SystemExit(f"corral:stage: {error}") from error
