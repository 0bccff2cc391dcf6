"""The listing index (gsi2): a tenant's jobs, newest first, one bounded Query of one shard at a time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.aws.clients import client
from shared.store import table
from shared.store.jobs import job_items
from shared.store.table_schema import JOBS_INDEX


@dataclass(frozen=True)
class IndexPage:
    items: list[dict[str, Any]]
    last_key: dict[str, Any] | None  # where DynamoDB stopped reading, if it did before the range's end
    read: int  # index entries read (before filters)


def query_jobs_index(
    tenant: str,
    shard: int,
    *,
    oldest_sort_key: str,
    newest_sort_key: str,
    start_after: dict[str, Any] | None,
    limit: int,
    filters: dict[str, str] | None = None,
    attributes: tuple[str, ...] | None = None,
) -> IndexPage:
    """One Query of one of the tenant's index partitions, newest first, between two sort keys (both
    included); `limit` caps the entries
    *read* (DynamoDB applies filters after reading). Straight to DynamoDB: a query through the status
    cache would be answered from its query cache and hide new jobs."""
    names = {f"#f{i}": name for i, name in enumerate(filters or {})}
    params: dict[str, Any] = {
        "TableName": table.name(),
        "IndexName": JOBS_INDEX.name,
        "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :oldest AND :newest",
        "ExpressionAttributeNames": {"#pk": JOBS_INDEX.partition_key, "#sk": JOBS_INDEX.sort_key} | names,
        "ExpressionAttributeValues": {
            ":pk": {"S": job_items.index_partition(tenant, shard)},
            ":oldest": {"S": oldest_sort_key},
            ":newest": {"S": newest_sort_key},
        }
        | {f":v{i}": {"S": value} for i, value in enumerate((filters or {}).values())},
        "ScanIndexForward": False,
        "Limit": limit,
    }
    if names:
        params["FilterExpression"] = " AND ".join(f"#f{i} = :v{i}" for i in range(len(names)))
    if attributes:
        projected = {f"#p{i}": name for i, name in enumerate(attributes)}
        params["ProjectionExpression"] = ", ".join(projected)
        params["ExpressionAttributeNames"] |= projected
    if start_after:
        params["ExclusiveStartKey"] = start_after
    answer = client("dynamodb").query(**params)
    return IndexPage(
        items=answer.get("Items", []), last_key=answer.get("LastEvaluatedKey"), read=answer.get("ScannedCount", 0)
    )
