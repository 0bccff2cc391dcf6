"""The embedded stack in one call, and the handle its users drive.

    with embedded_stack(port, state_dir) as stack:
        stack.platform.client().enqueue("echo")

`embedded_stack` starts the emulator (local/ministack.py), the sidecars (local/sidecars.py: the
fault proxy and the DAX stand-in) unless told not to, and deploys corral into it (local/deploy.py);
leaving the block stops them all. `make up` (local/up.py), the end-to-end session (tests/e2e) and
every benchmark scenario (bench/) start their stack with it.

`Platform` is what they drive: the API (a `client`), AWS clients for the stack's queue and table,
and on the embedded stack its faults (`chaos`). The end-to-end suite also builds one for any
deployed API (`make smoke`), where the AWS clients need credentials of their own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from client import Corral
from local.chaos import Chaos
from local.deploy import EXAMPLE_JOBS, Endpoint, deploy
from local.ministack import STATE, Ministack
from local.prewarm import Warmed
from local.sidecars import Sidecars
from shared import settings

NO_AWS_ACCESS = "needs AWS credentials for the deployed stack's queue/table (docs/deploy.md, make smoke)"


class NoAwsAccess(RuntimeError):
    """A queue or table check against a deployed API, without AWS credentials for its account."""


@dataclass(frozen=True)
class Platform:
    api_url: str
    api_key: str
    aws_env: dict[str, str]
    emulated: bool
    chaos: Chaos | None = None  # fault injection; only on the embedded stack
    warmed: tuple[Warmed, ...] = ()  # environments the embedded stack started after deploy (local/prewarm.py)

    def client(self, api_key: str | None = None) -> Corral:
        return Corral(self.api_url, api_key or self.api_key)

    @property
    def has_aws_access(self) -> bool:
        """Queue and table checks need AWS access: the emulator's, or credentials for a deployed stack."""
        return self.emulated or boto3.Session().get_credentials() is not None

    def require_aws(self) -> None:
        if not self.has_aws_access:
            raise NoAwsAccess(NO_AWS_ACCESS)

    def aws(self, service: str) -> Any:
        self.require_aws()
        return boto3.client(
            service,
            endpoint_url=self.aws_env.get("AWS_ENDPOINT_URL"),
            region_name=self.aws_env.get("AWS_DEFAULT_REGION"),
            aws_access_key_id=self.aws_env.get("AWS_ACCESS_KEY_ID"),
            aws_secret_access_key=self.aws_env.get("AWS_SECRET_ACCESS_KEY"),
        )

    def queue_url(self, name: str = settings.QUEUE_NAME) -> str:
        return self.aws("sqs").get_queue_url(QueueName=name)["QueueUrl"]


@dataclass(frozen=True)
class EmbeddedStack:
    """One running embedded stack: its emulator, its sidecars (if started) and what deploy answered."""

    emulator: Ministack
    sidecars: Sidecars | None
    endpoint: Endpoint
    deploy_seconds: float  # cdk bootstrap + deploy, and the pre-warm

    @property
    def aws_env(self) -> dict[str, str]:
        return self.emulator.env()

    @property
    def chaos(self) -> Chaos | None:
        if self.sidecars is None:
            return None
        return Chaos(self.sidecars.proxy_url, self.sidecars.cache_url, self.emulator.endpoint)

    @property
    def platform(self) -> Platform:
        return Platform(
            self.endpoint.api_url,
            self.endpoint.api_key,
            self.aws_env,
            emulated=True,
            chaos=self.chaos,
            warmed=tuple(self.endpoint.warmed),
        )


@contextmanager
def embedded_stack(
    port: int,
    state_dir: Path = STATE,
    *,
    sidecars: bool = True,
    sqs_through_proxy: bool = True,
    warm: bool = True,
    jobs: str | None = EXAMPLE_JOBS,
    lambda_targets: Sequence[str] = (),
    receive_budget: int | None = None,
    announce: bool = False,
) -> Iterator[EmbeddedStack]:
    """Start the emulator on 127.0.0.1:`port`, its sidecars, and deploy corral into it; stop it all on exit.

    `state_dir` holds the emulator's log, the deploy's log and outputs, and the sidecars' addresses.
    `sidecars=False`: the functions call the emulator directly (no faults can be injected).
    `sqs_through_proxy=False`: the enqueue path stays off the fault proxy (load runs measure the
    platform, not the extra hop). `warm`, `jobs`, `lambda_targets`, `receive_budget`: as `local.deploy.deploy`
    takes them.
    `announce`: print what is starting.
    """

    def say(line: str) -> None:
        if announce:
            print(line, flush=True)

    emulator = Ministack(port=port, log_path=state_dir / "ministack.log")
    standins = Sidecars(emulator.endpoint, state_dir=state_dir) if sidecars else None
    say(f"starting ministack on {emulator.endpoint} ...")
    emulator.start()
    try:
        if standins:
            standins.start()
        say("deploying the corral stack (cdk bootstrap + deploy) ...")
        started = time.monotonic()
        endpoint = deploy(
            emulator.env(),
            function_env=standins.function_env(sqs_through_proxy=sqs_through_proxy) if standins else None,
            state_dir=state_dir,
            warm=warm,
            jobs=jobs,
            lambda_targets=list(lambda_targets) or None,
            receive_budget=receive_budget,
        )
        yield EmbeddedStack(emulator, standins, endpoint, time.monotonic() - started)
    finally:
        if standins:
            standins.stop()
        emulator.stop()
