"""The corral API: HTTP API (API Gateway v2) -> API Lambda."""

from __future__ import annotations

import json

from aws_cdk import CfnOutput, RemovalPolicy
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import acknowledgements, table_access
from infra.parts import StackParts

API_TIMEOUT_SECONDS = 10
API_MEMORY_MB = 1024  # CPU scales with memory; cold starts and p99 enqueue latency are the SLO
# One JSON line per request (HTTP API $context variables): who, what, how it ended and how long it took.
ACCESS_LOG_FORMAT = json.dumps(
    {
        "requestId": "$context.requestId",
        "ip": "$context.identity.sourceIp",
        "time": "$context.requestTimeEpoch",
        "route": "$context.routeKey",
        "status": "$context.status",
        "length": "$context.responseLength",
        "latencyMs": "$context.responseLatency",
        "integrationLatencyMs": "$context.integrationLatency",
        "integrationError": "$context.integrationErrorMessage",
        "error": "$context.error.message",
    }
)


class Api(Construct):
    def __init__(self, scope: Construct, id: str, parts: StackParts) -> None:
        super().__init__(scope, id)
        names, queue, capacity = parts.names, parts.queue, parts.capacity
        self.function = parts.functions.function(
            self,
            "Handler",
            name=names.api_function,
            handler="functions.api.handler.handler",
            timeout_seconds=API_TIMEOUT_SECONDS,
            memory_mb=API_MEMORY_MB,
            service="corral-api",
            # On AWS a flood of jobs cannot take the API's concurrency: its share of the stage's (infra/capacity.py).
            reserved_concurrency=capacity.api_reserved if parts.profile.production else None,
        )
        queue.grant_send_jobs(self.function)
        # The operator view (functions/api/operator.py): queue counts and the worker's metrics, read only.
        queue.queue.grant(self.function, "sqs:GetQueueAttributes")
        queue.dlq.grant(self.function, "sqs:GetQueueAttributes")
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["cloudwatch:GetMetricData"], resources=["*"])  # no resource-level form
        )
        acknowledgements.metric_reader(self.function)
        table_access.grant(self.function, parts.store, worker=False)
        acknowledgements.table_grantee(self.function, parts.store.table)
        self.http_api = apigwv2.HttpApi(
            self,
            "HttpApi",
            api_name=names.api,
            default_integration=integrations.HttpLambdaIntegration("Lambda", self.function),
            create_default_stage=False,  # built below, with throttling and access logs
        )
        acknowledgements.http_api_default_route(self.http_api)
        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            # The stage's share of the account's API Gateway quota (infra/capacity.py).
            throttle=apigwv2.ThrottleSettings(rate_limit=capacity.throttle_rate, burst_limit=capacity.throttle_burst),
        )
        # Set on the L1 stage: the L2's IAccessLogSettings is an interface Python cannot pass as a dict.
        cfn_stage: apigwv2.CfnStage = self.stage.node.default_child  # type: ignore[assignment]
        cfn_stage.access_log_settings = apigwv2.CfnStage.AccessLogSettingsProperty(
            destination_arn=self.access_logs.log_group_arn, format=ACCESS_LOG_FORMAT
        )
        CfnOutput(scope, "ApiUrl", value=self.http_api.api_endpoint, description="Base URL of the corral API")
        CfnOutput(
            scope,
            "DashboardUrl",
            value=self.http_api.api_endpoint + "/dashboard",
            description="The web dashboard (sign in with an API key)",
        )
