"""Jobs store: one DynamoDB table for job records, schedules, API keys and config."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from shared import settings

RUNS_INDEX = "gsi1"  # schedule runs, newest first: gsi1pk = runs#<tenant>#<schedule>, gsi1sk = scheduled time


class JobStore(Construct):
    def __init__(self, scope: Construct, id: str, *, removal_policy: RemovalPolicy) -> None:
        super().__init__(scope, id)
        self.table = dynamodb.TableV2(
            self,
            "Table",
            table_name=settings.TABLE_NAME,
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.on_demand(),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute="expires_at",
            global_secondary_indexes=[
                dynamodb.GlobalSecondaryIndexPropsV2(
                    index_name=RUNS_INDEX,
                    partition_key=dynamodb.Attribute(name="gsi1pk", type=dynamodb.AttributeType.STRING),
                    sort_key=dynamodb.Attribute(name="gsi1sk", type=dynamodb.AttributeType.STRING),
                )
            ],
            removal_policy=removal_policy,
        )
