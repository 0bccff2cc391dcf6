#!/usr/bin/env python3
"""CDK entry point: `npx cdk deploy` (AWS) or `make up` (the embedded emulator)."""

from __future__ import annotations

import aws_cdk as cdk

from infra import jobs_package
from infra.lambda_targets import LambdaTargets
from infra.stack import CorralStack, function_env_from_context, profile_from_context
from shared import settings


def build_app(app: cdk.App) -> cdk.App:
    CorralStack(
        app,
        settings.STACK_NAME,
        profile=profile_from_context(app.node.try_get_context("corral:profile")),
        extra_function_env=function_env_from_context(app.node.try_get_context("corral:function_env")),
        jobs=jobs_package.from_context(app.node.try_get_context("corral:jobs")),
        lambda_targets=LambdaTargets.from_context(app.node.try_get_context("corral:lambda_targets")),
        description="corral: serverless background jobs (API -> SQS -> Lambda workers -> DynamoDB)",
    )
    return app


if __name__ == "__main__":
    build_app(cdk.App()).synth()
