"""The jobs table's keys and indexes, written once: the CDK stack builds the table from it, the unit
tests' moto table is created from it, so the two cannot drift apart.

Plain data (no CDK import): the functions and the tests import it cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared import settings

PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"


@dataclass(frozen=True)
class Index:
    name: str
    partition_key: str
    sort_key: str
    # None: every attribute (ALL); else the non-key attributes copied into the index (INCLUDE).
    include: tuple[str, ...] | None = None


# Schedule runs, newest first (gsi1pk = runs#<tenant>#<schedule>, gsi1sk = scheduled time),
# and a tenant's schedules (gsi1pk = schedules#<tenant>, gsi1sk = name).
RUNS_INDEX = Index("gsi1", "gsi1pk", "gsi1sk")

# A tenant's jobs, newest first: gsi2pk = tenant#<tenant>, gsi2sk = <enqueued_at ms, 13 digits>#<id>.
# Only the listing's fields are copied, not result_json/payload_json (up to 64 KiB each): a list page
# of 100 jobs stays far below Lambda's 6 MB response limit, and a status write costs the index ~1 WCU
# instead of the item's full size (docs/decisions/listing-and-stats.md "Why INCLUDE, not ALL").
JOBS_INDEX = Index(
    "gsi2",
    "gsi2pk",
    "gsi2sk",
    include=(
        "status",
        "tenant",
        "job_type",
        "attempts",
        "max_attempts",
        "timeout_seconds",
        "last_error",
        "enqueued_at",
        "started_at",
        "first_started_at",
        "finished_at",
        "cancelled_at",
        "retries",
        "schedule_name",
        "scheduled_for",
    ),
)

INDEXES = (RUNS_INDEX, JOBS_INDEX)


def create_table_params(table_name: str = settings.TABLE_NAME) -> dict[str, Any]:
    """boto3 `create_table` arguments for this schema (on-demand), e.g. for moto."""
    key_attributes = [PARTITION_KEY] + [name for index in INDEXES for name in (index.partition_key, index.sort_key)]
    return {
        "TableName": table_name,
        "KeySchema": [{"AttributeName": PARTITION_KEY, "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": name, "AttributeType": "S"} for name in key_attributes],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": index.name,
                "KeySchema": [
                    {"AttributeName": index.partition_key, "KeyType": "HASH"},
                    {"AttributeName": index.sort_key, "KeyType": "RANGE"},
                ],
                "Projection": (
                    {"ProjectionType": "ALL"}
                    if index.include is None
                    else {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(index.include)}
                ),
            }
            for index in INDEXES
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }
