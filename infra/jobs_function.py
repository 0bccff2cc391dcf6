"""The jobs function: runs the customer's job types, behind a fence (docs/decisions/customer-code-fence.md).

Deployed when the stack has a customer's job package (`-c corral:jobs=...`). It holds those packages
and their requirements' layer, and a thin handler (functions/jobs/handler.py) that runs one job the
worker sends it and answers the result or the job's failure. Its role writes its own log group and
nothing more: no table, no queue, no secret, no invoke. The worker invokes it synchronously
(shared/worker/run/fence.py); the worker's role may invoke it, by its exact ARN, and no other function of
corral's (infra/lambda_targets.py). Tenants' Lambda targets can never name it: it is named `corral-...`
like every function of the stack, which the allow-list refuses at synth and at run.

Its timeout is the worker's: a job runs at most the worker's job ceiling, and the function stops the
job's code itself at the job's time left (shared/execution/time_limit.py). On AWS it runs in subnets of its
own whose only route out is the stack's NAT gateways, so a job's requests leave from the stack's
`EgressIps` as they did from the worker, in a security group of its own that DAX does not admit, and
no private route an operator adds for the worker reaches it (infra/network.py). Its reserved
concurrency is its share of the stage's (infra/capacity.py): a throttled invoke is a failed attempt.
It is not traced (infra/functions.py).
"""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.parts import StackParts
from shared import settings

# As the worker's: the customer's code ran in the worker's 1 GB before, with its CPU share.
JOBS_FUNCTION_MEMORY_MB = 1024


class JobsFunction(Construct):
    def __init__(self, scope: Construct, id: str, parts: StackParts) -> None:
        super().__init__(scope, id)
        self.function = parts.functions.function(
            self,
            "Handler",
            name=parts.names.jobs_function,
            handler="functions.jobs.handler.handler",
            timeout_seconds=parts.profile.worker_timeout_seconds,
            memory_mb=JOBS_FUNCTION_MEMORY_MB,
            service=settings.JOBS_FUNCTION,  # the logs' service name, the same in every stage
            runs_customer_code=True,
            reserved_concurrency=parts.capacity.jobs_reserved if parts.profile.production else None,
        )


def deploy_if_needed(scope: Construct, parts: StackParts) -> lambda_.Function | None:
    """The jobs function, if the stack has a customer's job package to run in it; else None."""
    if not parts.functions.runs_customer_code:
        return None
    return JobsFunction(scope, "Jobs", parts).function
