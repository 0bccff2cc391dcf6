"""The jobs table as every item module of the store reaches it: its name, and one gsi1 listing read
whole, page by page (a tenant's keys, its far-future holds, its schedules; every tenant)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shared import environment
from shared.aws.clients import client
from shared.store.table_schema import RUNS_INDEX

# Pages of up to 1 MB each: far more tenants, keys, holds or schedules than any listing holds.
MAX_PAGES = 1000


def name() -> str:
    """The table's name, as the stack gave it to this function."""
    return environment.current().table


def partition_pages(partition: str, **query: Any) -> Iterator[dict[str, Any]]:
    """Each Query answer for one gsi1 partition, in the index's order, until the partition ends.
    `query`: further Query parameters (a projection, `Select="COUNT"`)."""
    params: dict[str, Any] = {
        "TableName": name(),
        "IndexName": RUNS_INDEX.name,
        "KeyConditionExpression": f"{RUNS_INDEX.partition_key} = :pk",
        "ExpressionAttributeValues": {":pk": {"S": partition}},
        **query,
    }
    for _ in range(MAX_PAGES):
        page = client("dynamodb").query(**params)
        yield page
        if "LastEvaluatedKey" not in page:
            return
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
