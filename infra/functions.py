"""The Lambda functions' shared pieces: code asset, dependencies layer, environment."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import acknowledgements, bundling
from infra.network import Network

RUNTIME = lambda_.Runtime.PYTHON_3_11  # matches bundling.PYTHON_VERSION


class FunctionFactory(Construct):
    """Builds functions that share one code asset, one dependencies layer and one environment."""

    def __init__(
        self, scope: Construct, id: str, *, environment: dict[str, str], network: Network | None = None
    ) -> None:
        super().__init__(scope, id)
        self.environment = environment
        self.network = network  # functions join the VPC only when there is one (the DAX cache needs it)
        self.code = lambda_.Code.from_asset(str(bundling.code_dir()))
        self.layer = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(str(bundling.dependencies_layer_dir())),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.X86_64],
            description="corral's pinned Python dependencies (functions/requirements.txt)",
        )

    def function(
        self, scope: Construct, id: str, *, name: str, handler: str, timeout_seconds: int, memory_mb: int, service: str
    ) -> lambda_.Function:
        log_group = logs.LogGroup(scope, f"{id}Logs", retention=logs.RetentionDays.ONE_MONTH)
        function = lambda_.Function(
            scope,
            id,
            function_name=name,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.X86_64,
            code=self.code,
            handler=handler,
            layers=[self.layer],
            timeout=Duration.seconds(timeout_seconds),
            memory_size=memory_mb,
            # The log level is explicit: otherwise Powertools falls back to LOG_LEVEL, which the
            # embedded emulator leaks from its own environment (WARNING), silencing the one line
            # per invocation (and a silent function waits 50 ms per invoke there).
            environment={**self.environment, "POWERTOOLS_SERVICE_NAME": service, "POWERTOOLS_LOG_LEVEL": "INFO"},
            log_group=log_group,
            **self._placement(),
        )
        acknowledgements.lambda_function(function, in_vpc=self.network is not None)
        return function

    def _placement(self) -> dict[str, object]:
        if self.network is None:
            return {}
        return {
            "vpc": self.network.vpc,
            "vpc_subnets": self.network.subnets,
            "security_groups": [self.network.functions_security_group],
        }
