"""The corral CDK app: one CorralStack, configured from the app's context (`-c corral:...`).

`app.py` at the project root (cdk.json's entry point) and infra/synth.py both build it here, so an
in-process synth is exactly what `cdk deploy` deploys.
"""

from __future__ import annotations

import aws_cdk as cdk

from infra import jobs_package
from infra.lambda_targets import LambdaTargets
from infra.stack import CorralStack, function_env_from_context, profile_from_context
from shared import settings


def build_app(app: cdk.App) -> cdk.App:
    profile = profile_from_context(app.node.try_get_context("corral:profile"))
    CorralStack(
        app,
        settings.STACK_NAME,
        profile=profile,
        extra_function_env=function_env_from_context(app.node.try_get_context("corral:function_env")),
        jobs=jobs_package.from_context(app.node.try_get_context("corral:jobs"), profile.name),
        lambda_targets=LambdaTargets.from_context(app.node.try_get_context("corral:lambda_targets")),
        description="corral: serverless background jobs (API -> SQS -> Lambda workers -> DynamoDB)",
    )
    return app
