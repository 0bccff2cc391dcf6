"""Jobs store: one DynamoDB table for job records, schedules, API keys and config."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from shared import settings
from shared.profiles import Profile
from shared.settings import ResourceNames
from shared.store import table_schema


def _index_props(index: table_schema.Index, profile: Profile) -> dynamodb.GlobalSecondaryIndexPropsV2:
    projection = (
        {"projection_type": dynamodb.ProjectionType.ALL}
        if index.include is None
        else {"projection_type": dynamodb.ProjectionType.INCLUDE, "non_key_attributes": list(index.include)}
    )
    return dynamodb.GlobalSecondaryIndexPropsV2(
        index_name=index.name,
        partition_key=dynamodb.Attribute(name=index.partition_key, type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name=index.sort_key, type=dynamodb.AttributeType.STRING),
        **projection,
        **_warm_throughput(profile),
    )


def _warm_throughput(profile: Profile) -> dict[str, dynamodb.WarmThroughput]:
    """What the table (and each index) serves from its first second, on AWS: the herd's writes
    (settings.TABLE_WARM_WRITES_PER_SECOND, from `make capacity`)."""
    if not profile.production:
        return {}
    return {
        "warm_throughput": dynamodb.WarmThroughput(
            read_units_per_second=settings.TABLE_WARM_READS_PER_SECOND,
            write_units_per_second=settings.TABLE_WARM_WRITES_PER_SECOND,
        )
    }


def _removal(profile: Profile, deletion_protection: bool) -> dict[str, object]:
    """The emulator's table goes with its stack. On AWS it stays when the stack is deleted or the table
    replaced, but not when its first create fails (RETAIN would keep a half-deployed table whose name
    every retry then collides with), and a DeleteTable call is refused while protection is on.

    Protection and that rollback exclude each other: CloudFormation cannot delete a protected table, so
    a failed first create would end ROLLBACK_FAILED with the table left behind. A stage's first deploy
    therefore turns protection off (`-c corral:table_deletion_protection=false`), and the next deploy,
    without the flag, turns it on in place (docs/decisions/table-protection.md)."""
    if not profile.production:
        return {"removal_policy": RemovalPolicy.DESTROY}
    return {"removal_policy": RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE, "deletion_protection": deletion_protection}


class JobStore(Construct):
    def __init__(
        self, scope: Construct, id: str, *, names: ResourceNames, profile: Profile, deletion_protection: bool = True
    ) -> None:
        super().__init__(scope, id)
        self.table = dynamodb.TableV2(
            self,
            "Table",
            table_name=names.table,
            partition_key=dynamodb.Attribute(name=table_schema.PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.on_demand(),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=table_schema.TTL_ATTRIBUTE,
            # CloudFormation adds one new index per table update; an existing stack gains gsi2 in one deploy.
            global_secondary_indexes=[_index_props(index, profile) for index in table_schema.INDEXES],
            **_warm_throughput(profile),
            **_removal(profile, deletion_protection),  # type: ignore[arg-type]
        )
