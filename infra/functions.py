"""The Lambda functions' shared pieces: code asset, dependencies layer, environment."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import acknowledgements, bundling, jobs_package
from infra.jobs_package import JobsPackage
from infra.network import Network
from shared import environment, settings
from shared.environment import FunctionEnv

RUNTIME = lambda_.Runtime.PYTHON_3_11  # matches bundling.PYTHON_VERSION
# What Lambda does to put a function in a VPC (AWSLambdaVPCAccessExecutionRole's actions).
ENI_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)
ENI_READS = ("ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets")


class FunctionFactory(Construct):
    """Builds functions that share the dependencies layer and the stack's environment.

    Two code assets: the API and the worker share one (the platform's code, the declarations of every
    job type, the profile's test tooling); the jobs function has its own, holding the customer's job
    packages, with their requirements' layers (`jobs_*` below; docs/decisions/customer-code-fence.md).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        function_env: FunctionEnv,
        extra_environment: dict[str, str] | None = None,
        network: Network | None = None,
        jobs: Sequence[JobsPackage] = (),
        aws_services: tuple[str, ...] | None = None,
        tracing: bool = False,
        otel_layer_arn: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        # X-Ray (profile aws): Lambda's active tracing, and Powertools' Tracer in the handlers
        # (shared/aws/tracing.py). The emulator has no X-Ray: its functions neither trace nor load the SDK.
        self.tracing = tracing
        # OpenTelemetry instead of the X-Ray SDK (`-c corral:otel_layer=<ADOT layer ARN>`): AWS's ADOT layer
        # instruments each function through its exec wrapper and exports to X-Ray (docs/decisions/tracing.md).
        self.otel = (
            lambda_.LayerVersion.from_layer_version_arn(self, "OpenTelemetry", otel_layer_arn)
            if otel_layer_arn
            else None
        )
        self.network = network  # functions join the VPC only when there is one (the DAX cache needs it)
        tooling, customers = jobs_package.platform_tooling(jobs), jobs_package.customers(jobs)
        code_dir = bundling.code_dir([package.path for package in tooling])
        jobs_code_dir = bundling.jobs_code_dir([package.path for package in customers]) if customers else None
        # A trimmed layer keeps the API models of the platform's services and `aws_services` only.
        layer_dirs = [bundling.dependencies_layer_dir(aws_services)]
        self.code = lambda_.Code.from_asset(str(code_dir))
        self.jobs_code = lambda_.Code.from_asset(str(jobs_code_dir)) if jobs_code_dir else None
        self.layers = [self._layer("Dependencies", layer_dirs[0], "corral's pinned Python dependencies")]
        # The customer's code runs with the platform's dependencies (its pins were resolved against them).
        self.jobs_layers = list(self.layers)
        for package in jobs:
            if package.requirements:  # each package's requirements in a layer of its own
                layer_dirs.append(bundling.jobs_layer_dir(package.requirements))
                layer_id = package.name.title().replace("_", "") + "Dependencies"  # examples/jobs: JobsDependencies
                layer = self._layer(layer_id, layer_dirs[-1], f"the {package.name} job package's")
                (self.layers if package.platform_tooling else self.jobs_layers).append(layer)
        code_dirs = [code_dir, *([jobs_code_dir] if jobs_code_dir else [])]
        self.job_types = jobs_package.registry(code_dirs, layer_dirs, jobs)  # fails the synth on a clash
        # `extra_environment` (cdk context corral:function_env) goes on top: endpoints a local run redirects.
        self.environment = {
            **function_env.but(
                jobs_package=jobs_package.environment_value(tooling),
                jobs_function=settings.names(function_env.stage).jobs_function if customers else "",
            ).as_environment(),
            **(extra_environment or {}),
        }
        # The jobs function is told which packages to import and nothing else of the stack's.
        self.jobs_environment = {environment.variable("jobs_package"): jobs_package.environment_value(customers)}

    @property
    def runs_customer_code(self) -> bool:
        """Whether the stack has a customer's job package, and so a jobs function to run it."""
        return self.jobs_code is not None

    def _layer(self, id: str, directory: Path, description: str) -> lambda_.LayerVersion:
        return lambda_.LayerVersion(
            self,
            id,
            code=lambda_.Code.from_asset(str(directory)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.X86_64],
            description=f"{description} requirements",
        )

    def function(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        handler: str,
        timeout_seconds: int,
        memory_mb: int,
        service: str,
        reserved_concurrency: int | None = None,
        runs_customer_code: bool = False,
    ) -> lambda_.Function:
        """A function with its own role and log group. `runs_customer_code`: the jobs function's asset,
        layers and environment instead of the platform's, its own subnets and security group in the VPC,
        and no tracing (below)."""
        log_group = logs.LogGroup(scope, f"{id}Logs", retention=logs.RetentionDays.ONE_MONTH)
        if runs_customer_code and self.jobs_code is None:
            raise ValueError("no customer job package is deployed: there is nothing for a jobs function to run")
        # The customer's code is not traced: active tracing needs xray:PutTraceSegments on "*" in the role, and
        # with it the code could write any segment into the account's traces (docs/decisions/tracing.md). The
        # worker's trace still shows each invoke of the jobs function, and how long it took.
        traced = self.tracing and not runs_customer_code
        otel = [self.otel] if self.otel and not runs_customer_code else []
        function = lambda_.Function(
            scope,
            id,
            function_name=name,
            role=self._role(scope, id, name, log_group),
            runtime=RUNTIME,
            architecture=lambda_.Architecture.X86_64,
            code=self.jobs_code if runs_customer_code and self.jobs_code else self.code,
            handler=handler,
            layers=[*(self.jobs_layers if runs_customer_code else self.layers), *otel],
            timeout=Duration.seconds(timeout_seconds),
            memory_size=memory_mb,
            # The log level is explicit: otherwise Powertools falls back to LOG_LEVEL, which the
            # embedded emulator leaks from its own environment (WARNING), silencing the one line
            # per invocation (and a silent function waits 50 ms per invoke there).
            environment={
                **(self.jobs_environment if runs_customer_code else self.environment),
                "POWERTOOLS_SERVICE_NAME": service,
                "POWERTOOLS_LOG_LEVEL": "INFO",
                "POWERTOOLS_TRACE_DISABLED": "false" if traced and not otel else "true",
                **({"AWS_LAMBDA_EXEC_WRAPPER": "/opt/otel-instrument", "OTEL_SERVICE_NAME": service} if otel else {}),
            },
            tracing=lambda_.Tracing.ACTIVE if traced else lambda_.Tracing.DISABLED,
            log_group=log_group,
            reserved_concurrent_executions=reserved_concurrency,
            **self._placement(scope, runs_customer_code),
        )
        acknowledgements.lambda_function(function, traced=traced, customer_code=runs_customer_code)
        if traced:
            acknowledgements.xray_writer(function)
        return function

    def _role(self, scope: Construct, id: str, name: str, log_group: logs.LogGroup) -> iam.Role:
        """The function's own role: its own log group, and (in a VPC) the network interfaces Lambda makes.

        Not AWS's managed execution policies: those let any code in the function write every log group
        of the account and create or delete network interfaces in any subnet. Lambda's own interface
        calls carry no `lambda:SourceFunctionArn`; calls from the function's code do, so the Deny
        takes the interface actions, reads included (every interface and subnet of the account), from
        the code and leaves them to Lambda. The key names the function, or a version or alias of it.

        The role lists the interface policy among its managed policies, so CloudFormation attaches it
        before it creates the function (Lambda refuses a VPC function whose role cannot make interfaces)
        and keeps it until the function is deleted (Lambda deletes the interfaces with the role).
        """
        role = iam.Role(scope, f"{id}ServiceRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]
            )
        )
        if self.network is not None:
            function_arn = Stack.of(scope).format_arn(
                service="lambda", resource="function", resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
            )
            # A policy of its own, as AWS's VPC execution policy was: Lambda's plumbing, apart from what
            # the function's code may do.
            network_interfaces = iam.ManagedPolicy(
                scope,
                f"{id}NetworkInterfaces",
                description=f"Lambda puts {name} in the VPC; the function's own code may not",
                statements=[
                    iam.PolicyStatement(actions=[*ENI_ACTIONS, *ENI_READS], resources=["*"]),
                    iam.PolicyStatement(
                        effect=iam.Effect.DENY,
                        actions=[*ENI_ACTIONS, *ENI_READS],
                        resources=["*"],
                        conditions={"ArnLike": {"lambda:SourceFunctionArn": [function_arn, f"{function_arn}:*"]}},
                    ),
                ],
            )
            role.add_managed_policy(network_interfaces)
            acknowledgements.network_interfaces(network_interfaces)
        return role

    def _placement(self, scope: Construct, runs_customer_code: bool) -> dict[str, object]:
        if self.network is None:
            return {}
        if runs_customer_code:  # subnets and a security group of its own (infra/network.py)
            subnets, group = self.network.customer_code_subnets, self.network.customer_code_security_group(scope)
        else:
            subnets, group = self.network.subnets, self.network.functions_security_group
        return {"vpc": self.network.vpc, "vpc_subnets": subnets, "security_groups": [group]}
