"""Deploy the CDK app into an emulator (or any endpoint) and write .corral/endpoint.json."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import boto3

from local.prewarm import Warmed, prewarm
from shared import environment, settings
from shared.aws.clients import client
from shared.environment import FunctionEnv
from shared.tenants import operators, tenants

ROOT = Path(__file__).resolve().parent.parent
CDK = ROOT / "node_modules" / ".bin" / "cdk"
QUIET_CDK = {"CDK_DISABLE_CLI_TELEMETRY": "true", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
DEMO_TENANT = "demo"
EXAMPLE_JOBS = "examples/jobs"  # the worked example of a customer's job package


@dataclass(frozen=True)
class Endpoint:
    api_url: str
    api_key: str
    aws_endpoint: str
    warmed: list[Warmed] = field(default_factory=list)  # execution environments started after deploy

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps({"api_url": self.api_url, "api_key": self.api_key, "aws_endpoint": self.aws_endpoint}, indent=2)
            + "\n"
        )


def _cdk(args: list[str], env: dict[str, str], log: Path) -> None:
    with log.open("ab") as out:
        result = subprocess.run([str(CDK), *args], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"cdk {' '.join(args[:1])} failed (exit {result.returncode}); log {log}:\n{tail}")


def deploy_app(
    app: str, stack: str, aws_env: dict[str, str], context: dict[str, str], state_dir: Path
) -> dict[str, str]:
    """Deploy another CDK app (`app`: cdk's --app command, run from the checkout) into an account
    `deploy` has bootstrapped, with its own cloud assembly and log in `state_dir`; `stack`'s outputs.
    `make compare` deploys its bare pipeline (bench/compare/bare/app.py) beside corral this way."""
    env = {**os.environ, **QUIET_CDK, **aws_env}
    log = state_dir / f"deploy-{stack}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    outputs = state_dir / f"outputs-{stack}.json"
    options = [item for name, value in context.items() for item in ("-c", f"{name}={value}")]
    assembly = str(state_dir / f"cdk.out-{stack}")  # corral's own cdk.out stays as its deploy left it
    deploy_args = ["deploy", stack, "--app", app, "--output", assembly, "--require-approval", "never"]
    _cdk([*deploy_args, "--outputs-file", str(outputs), *options], env, log)
    return dict(json.loads(outputs.read_text())[stack])


def api_base_url(aws_endpoint: str, api_id: str) -> str:
    """The emulators' path form: no wildcard DNS needed (LocalStack and ministack both serve it)."""
    return f"{aws_endpoint}/_aws/execute-api/{api_id}"


def deploy(
    aws_env: dict[str, str],
    *,
    profile: str = "local",
    function_env: dict[str, str] | None = None,
    state_dir: Path = ROOT / ".corral",
    warm: bool = True,
    jobs: str | None = EXAMPLE_JOBS,
    lambda_targets: list[str] | None = None,
    receive_budget: int | None = None,
) -> Endpoint:
    """`warm`: start the environments the first jobs need now (local/prewarm.py), not when they arrive;
    `jobs`: the customer's job package folders to deploy, comma-separated (`corral:jobs`);
    `lambda_targets`: `corral:lambda_targets`, entries `pattern=tenant|tenant` (or `pattern=*`);
    `receive_budget`: `corral:receive_budget`, the jobs queue's maxReceiveCount (the profile's if None)."""
    env = {**os.environ, **QUIET_CDK, **aws_env}
    log = state_dir / "deploy.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    outputs = state_dir / "outputs.json"
    account, region = aws_env["CDK_DEFAULT_ACCOUNT"], aws_env["AWS_DEFAULT_REGION"]
    _cdk(["bootstrap", f"aws://{account}/{region}"], env, log)
    context = ["-c", f"corral:profile={profile}"]
    if function_env:
        context += ["-c", f"corral:function_env={json.dumps(function_env)}"]
    if jobs:
        context += ["-c", f"corral:jobs={jobs}"]
    if lambda_targets:
        context += ["-c", f"corral:lambda_targets={json.dumps(lambda_targets)}"]
    if receive_budget is not None:
        context += ["-c", f"corral:receive_budget={receive_budget}"]
    _cdk(["deploy", "--require-approval", "never", "--outputs-file", str(outputs), *context], env, log)
    api_url = json.loads(outputs.read_text())[settings.STACK_NAME]["ApiUrl"]
    aws_endpoint = aws_env["AWS_ENDPOINT_URL"]
    _after_deploy(aws_env)
    api_id = api_url.split("//", 1)[1].split(".", 1)[0]
    warmed = prewarm(aws_env) if warm else []
    return Endpoint(
        api_url=api_base_url(aws_endpoint, api_id),
        api_key=_demo_key(aws_env),
        aws_endpoint=aws_endpoint,
        warmed=warmed,
    )


def _client(service: str, aws_env: dict[str, str]):  # noqa: ANN202 - a boto3 client
    return boto3.client(
        service,
        endpoint_url=aws_env["AWS_ENDPOINT_URL"],
        region_name=aws_env["AWS_DEFAULT_REGION"],
        aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"],
    )


def _after_deploy(aws_env: dict[str, str]) -> None:
    """Emulator gaps, filled after deploy: ministack ignores TTL from CloudFormation."""
    dynamodb = _client("dynamodb", aws_env)
    ttl = dynamodb.describe_time_to_live(TableName=settings.TABLE_NAME)["TimeToLiveDescription"]
    if ttl.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
        dynamodb.update_time_to_live(
            TableName=settings.TABLE_NAME, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
        )


def _demo_key(aws_env: dict[str, str]) -> str:
    return create_api_key(aws_env, DEMO_TENANT, label=f"demo key {time.strftime('%Y-%m-%d %H:%M:%S')}")


@contextmanager
def function_environment(env: dict[str, str], settings_: FunctionEnv | None = None) -> Iterator[None]:
    """Run the product's own code (shared/) in this process as a function runs it: with `env` (the
    emulator's endpoint and credentials) in the process environment and `settings_` as the
    functions' `FunctionEnv`, its AWS clients built for it and forgotten afterwards. pynamodb also
    resolves endpoint and credentials from the process environment."""
    saved = os.environ.copy()
    os.environ.update(env)
    client.cache_clear()
    environment.use(settings_)
    try:
        yield
    finally:
        environment.use(None)
        client.cache_clear()
        os.environ.clear()
        os.environ.update(saved)


def create_operator_key(aws_env: dict[str, str], label: str) -> str:
    with function_environment(aws_env):
        return operators.create_key(label)


def create_api_key(aws_env: dict[str, str], tenant: str, label: str) -> str:
    with function_environment(aws_env):
        return tenants.create_key(tenant, label=label)
