"""The bare pipeline's CDK app (stack `bare`): `make compare` deploys it beside corral in the same emulator.

    cdk deploy --app "python -m bench.compare.bare.app" -c bare:function_env='{...}' -c bare:api_key=...

corral's shape cut to its minimum: an HTTP API → an API Lambda doing one SendMessage → an SQS queue
→ a worker Lambda on the SQS event source (corral's batch size and concurrency) → one unconditional
PutItem per job in a DynamoDB table. Its functions' code is bench/compare/bare/functions, no layer.
Timeouts, memory and the queue's visibility are corral's local profile's, so only the code differs.
"""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from bench.compare.names import BARE_API_FUNCTION, BARE_NAME, BARE_STACK, BARE_WORKER_FUNCTION
from infra.api import API_MEMORY_MB, API_TIMEOUT_SECONDS
from infra.functions import RUNTIME
from infra.workers import WORKER_MEMORY_MB
from shared import profiles, settings

CODE = Path(__file__).resolve().parent / "functions"


class BareStack(cdk.Stack):
    def __init__(
        self, scope: Construct, id: str, *, function_env: dict[str, str], api_key: str, **kwargs: object
    ) -> None:
        super().__init__(scope, id, **kwargs)
        profile = profiles.PROFILES["local"]
        visibility = cdk.Duration.seconds(profile.visibility_timeout_seconds)
        queue = sqs.Queue(self, "Jobs", queue_name=BARE_NAME, visibility_timeout=visibility)
        table = dynamodb.TableV2(
            self,
            "Table",
            table_name=BARE_NAME,
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.on_demand(),
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        environment = {"BARE_QUEUE_URL": queue.queue_url, "BARE_TABLE": BARE_NAME, **function_env}
        code = lambda_.Code.from_asset(str(CODE))
        api = lambda_.Function(
            self,
            "Api",
            function_name=BARE_API_FUNCTION,
            runtime=RUNTIME,
            code=code,
            handler="api.handler",
            timeout=cdk.Duration.seconds(API_TIMEOUT_SECONDS),
            memory_size=API_MEMORY_MB,
            environment={**environment, "BARE_API_KEY": api_key},
        )
        worker = lambda_.Function(
            self,
            "Worker",
            function_name=BARE_WORKER_FUNCTION,
            runtime=RUNTIME,
            code=code,
            handler="worker.handler",
            timeout=cdk.Duration.seconds(profile.worker_timeout_seconds),
            memory_size=WORKER_MEMORY_MB,
            environment=environment,
        )
        queue.grant_send_messages(api)
        table.grant_read_data(api)
        table.grant_write_data(worker)
        worker.add_event_source(
            event_sources.SqsEventSource(
                queue,
                batch_size=settings.WORKER_BATCH_SIZE,
                max_batching_window=cdk.Duration.seconds(settings.WORKER_BATCHING_WINDOW_SECONDS),
                max_concurrency=settings.WORKER_MAX_CONCURRENCY,
            )
        )
        http_api = apigwv2.HttpApi(
            self, "HttpApi", api_name="bare", default_integration=integrations.HttpLambdaIntegration("Lambda", api)
        )
        cdk.CfnOutput(self, "ApiUrl", value=http_api.api_endpoint)


def build(app: cdk.App) -> cdk.App:
    function_env = json.loads(app.node.try_get_context("bare:function_env") or "{}")
    BareStack(app, BARE_STACK, function_env=function_env, api_key=app.node.try_get_context("bare:api_key") or "")
    return app


if __name__ == "__main__":
    build(cdk.App()).synth()
