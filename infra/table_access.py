"""Which function may touch which kind of item in the jobs table, as IAM says it.

One table holds every item kind (shared/store/keys.py). Each function role gets the item actions its
code calls, no more (no Scan, no batch writes, no stream reads), and a Deny on writes to the item kinds it
never writes, keyed on the item's partition key (`dynamodb:LeadingKeys`). The Deny is what keeps a
compromised function, or a customer's job package running inside one, from minting a tenant or
operator key: only the operator's own credentials (the `corral` CLI) write those. The table below is
also in docs/decisions/least-privilege.md.

A Scan or a request without a partition key does not match a `ForAnyValue` condition, which is why
no role holds Scan: with it, the Deny would not stop a read of every item.

DAX bypasses the callers' item-level conditions (it acts with its own role), so the cluster's role
is held to job items alone, the only kind that goes through it (shared/aws/status_cache.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from infra.store import JobStore
from shared.store import keys

# What the code calls (shared/store/): GetItem, Query (the indexes), PutItem, UpdateItem, DeleteItem,
# and TransactWriteItems, which IAM authorises as the Put/Update/Delete/ConditionCheck it holds.
READS = ("dynamodb:GetItem", "dynamodb:Query")
# The worker alone: an event reads its name's triggers, up to 100 a call (shared/store/flow/trigger_items.py).
WORKER_READS = ("dynamodb:BatchGetItem",)
WRITES = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem")
# pynamodb (schedule records, the API only) reads the table's key schema once per process.
DESCRIBE = ("dynamodb:DescribeTable",)
# Actions no function role holds: whole-table reads, batch writes, streams (and the API, WORKER_READS).
NEVER = (
    "dynamodb:Scan",
    "dynamodb:BatchWriteItem",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    # PartiQL statements are authorised as these actions, not as GetItem or PutItem: none of them is held,
    # and naming them here keeps it so whatever a later Allow says.
    "dynamodb:PartiQLSelect",
    "dynamodb:PartiQLInsert",
    "dynamodb:PartiQLUpdate",
    "dynamodb:PartiQLDelete",
)
# DAX carries GetItem, PutItem and UpdateItem on job items (shared/store/jobs/job_store.py `_jobs_client`).
DAX_FUNCTION_ACTIONS = ("dax:GetItem", "dax:PutItem", "dax:UpdateItem")
DAX_ROLE_ITEM_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")


@dataclass(frozen=True)
class ItemKind:
    name: str
    prefix: str
    api_writes: bool
    worker_writes: bool


# Every item kind, and who writes it (both functions read what their paths need).
ITEM_KINDS = (
    ItemKind("job record", keys.JOB, api_writes=True, worker_writes=True),  # cancel/retry; claim, outcome
    ItemKind("quota usage", keys.USAGE, api_writes=True, worker_writes=True),  # take; give back on arrival
    ItemKind("far-future hold", keys.HOLD, api_writes=True, worker_writes=True),
    ItemKind("id secret", keys.CONFIG, api_writes=True, worker_writes=True),  # created by the first cold start
    ItemKind("signing secrets", keys.SIGNING_SECRETS, api_writes=True, worker_writes=True),  # first use, rotate
    ItemKind("rate window", keys.RATE_WINDOW, api_writes=True, worker_writes=False),
    ItemKind("running slots", keys.RUNNING, api_writes=False, worker_writes=True),  # a batch takes, gives back
    ItemKind("batch", keys.BATCH, api_writes=True, worker_writes=True),  # create, cancel, retry; members' ends
    ItemKind("schedule record", keys.SCHEDULE, api_writes=True, worker_writes=False),
    ItemKind("tenant", keys.TENANT, api_writes=False, worker_writes=False),  # the operator CLI
    ItemKind("API key", keys.API_KEY, api_writes=False, worker_writes=False),  # the operator CLI
    ItemKind("operator key", keys.OPERATOR_KEY, api_writes=False, worker_writes=False),  # the operator CLI
)


def _table_resources(store: JobStore) -> list[str]:
    return [store.table.table_arn, f"{store.table.table_arn}/index/*"]


def _never_written(worker: bool) -> list[str]:
    return [f"{kind.prefix}*" for kind in ITEM_KINDS if not (kind.worker_writes if worker else kind.api_writes)]


def grant(function: lambda_.IFunction, store: JobStore, *, worker: bool) -> None:
    """The item actions a corral function calls, and a Deny on writing the item kinds it never writes."""
    actions = [*READS, *WRITES, *(WORKER_READS if worker else DESCRIBE)]
    function.add_to_role_policy(iam.PolicyStatement(actions=actions, resources=_table_resources(store)))
    function.add_to_role_policy(
        iam.PolicyStatement(
            effect=iam.Effect.DENY,
            actions=[*WRITES, "dynamodb:BatchWriteItem"],
            resources=_table_resources(store),
            conditions={"ForAnyValue:StringLike": {"dynamodb:LeadingKeys": _never_written(worker)}},
        )
    )
    function.add_to_role_policy(
        iam.PolicyStatement(
            effect=iam.Effect.DENY,
            actions=[*NEVER, *(() if worker else WORKER_READS)],
            resources=_table_resources(store),
        )
    )


def grant_dax_role(role: iam.IRole, store: JobStore) -> None:
    """What DAX does on the callers' behalf: job items only (their `pk` starts with job#). `ForAllValues`
    holds for a request with no key at all, so the Null condition requires one."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=list(DAX_ROLE_ITEM_ACTIONS),
            resources=[store.table.table_arn],
            conditions={
                "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{keys.JOB}*"]},
                "Null": {"dynamodb:LeadingKeys": "false"},
            },
        )
    )
    role.add_to_principal_policy(iam.PolicyStatement(actions=list(DESCRIBE), resources=[store.table.table_arn]))
