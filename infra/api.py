"""Scheduler API: HTTP API (API Gateway v2) -> API Lambda."""

from __future__ import annotations

from aws_cdk import CfnOutput
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from constructs import Construct

from infra.functions import FunctionFactory
from infra.queue import JobQueue
from infra.store import JobStore
from shared import settings

API_TIMEOUT_SECONDS = 10
API_MEMORY_MB = 1024  # CPU scales with memory; cold starts and p99 enqueue latency are the SLO


class Api(Construct):
    def __init__(
        self, scope: Construct, id: str, *, functions: FunctionFactory, store: JobStore, queue: JobQueue
    ) -> None:
        super().__init__(scope, id)
        self.function = functions.function(
            self,
            "Handler",
            name=settings.API_FUNCTION,
            handler="functions.api.handler.handler",
            timeout_seconds=API_TIMEOUT_SECONDS,
            memory_mb=API_MEMORY_MB,
            service="corral-api",
        )
        queue.queue.grant_send_messages(self.function)
        store.table.grant_read_write_data(self.function)
        self.http_api = apigwv2.HttpApi(
            self,
            "HttpApi",
            api_name=settings.API_NAME,
            default_integration=integrations.HttpLambdaIntegration("Lambda", self.function),
        )
        CfnOutput(scope, "ApiUrl", value=self.http_api.api_endpoint, description="Base URL of the corral API")
