"""Jobs store: one DynamoDB table for job records, schedules, API keys and config."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from shared import settings
from shared.store import table_schema


def _index_props(index: table_schema.Index) -> dynamodb.GlobalSecondaryIndexPropsV2:
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
    )


class JobStore(Construct):
    def __init__(self, scope: Construct, id: str, *, removal_policy: RemovalPolicy) -> None:
        super().__init__(scope, id)
        self.table = dynamodb.TableV2(
            self,
            "Table",
            table_name=settings.TABLE_NAME,
            partition_key=dynamodb.Attribute(name=table_schema.PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.on_demand(),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=table_schema.TTL_ATTRIBUTE,
            # CloudFormation adds one new index per table update; an existing stack gains gsi2 in one deploy.
            global_secondary_indexes=[_index_props(index) for index in table_schema.INDEXES],
            removal_policy=removal_policy,
        )
