"""The jobs function: runs the customer's job types, behind a fence (docs/decisions/customer-code-fence.md).

Deployed when the stack has a customer's job package (`-c corral:jobs=...`). It holds those packages
and their requirements' layer, and a thin handler (functions/jobs/handler.py) that runs one job the
worker sends it and answers the result or the job's failure. Its role writes its own log group and
nothing more: no table, no queue, no secret, no invoke. The worker invokes it synchronously
(shared/worker/fence.py); the worker's role may invoke it, by its exact ARN, and no other function of
corral's (infra/lambda_targets.py). Tenants' Lambda targets can never name it: it is named `corral-...`
like every function of the stack, which the allow-list refuses at synth and at run.

Its timeout is the worker's: a job runs at most the worker's job ceiling, and the function stops the
job's code itself at the job's time left (shared/jobs/time_limit.py). On AWS it runs in the VPC's
function subnets, so a job's requests leave from the stack's `EgressIps` as they did from the
worker, in a security group of its own that DAX does not admit (infra/network.py).
"""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.functions import FunctionFactory
from infra.network import Network
from shared import settings
from shared.settings import Profile, ResourceNames

# As the worker's: the customer's code ran in the worker's 1 GB before, with its CPU share.
JOBS_FUNCTION_MEMORY_MB = 1024


class JobsFunction(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        profile: Profile,
        functions: FunctionFactory,
        network: Network | None,
        names: ResourceNames,
    ) -> None:
        super().__init__(scope, id)
        self.function = functions.function(
            self,
            "Handler",
            name=names.jobs_function,
            handler="functions.jobs.handler.handler",
            timeout_seconds=profile.worker_timeout_seconds,
            memory_mb=JOBS_FUNCTION_MEMORY_MB,
            service=settings.JOBS_FUNCTION,  # the logs' service name, the same in every stage
            runs_customer_code=True,
            security_group=network.customer_code_security_group(self) if network else None,
        )


def deploy_if_needed(
    scope: Construct, *, profile: Profile, functions: FunctionFactory, network: Network | None, names: ResourceNames
) -> lambda_.Function | None:
    """The jobs function, if the stack has a customer's job package to run in it; else None."""
    if not functions.runs_customer_code:
        return None
    return JobsFunction(scope, "Jobs", profile=profile, functions=functions, network=network, names=names).function
