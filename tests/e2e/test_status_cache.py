"""The status cache (DAX's local stand-in) in front of the store: polls do not load the store.

Store reads are counted by the fault proxy every DynamoDB request of the functions
passes through (local/platform.py wires them), so they are the store's real load.
"""

import uuid
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.exceptions import ClientError

from local.chaos import Chaos
from shared import settings


def _store_reads(chaos: Chaos, job_id: str) -> int:
    return sum(1 for request in chaos.store_requests(job_id) if request["operation"] == "GetItem")


def test_a_thousand_polls_of_a_finished_job_cost_a_handful_of_store_reads(deployed, chaos):
    api = deployed.client()
    api.timeout = 30  # the emulator cold-starts API instances as concurrency rises: seconds on a busy machine
    job_id = api.enqueue("echo", {"polled": True})
    api.wait(job_id)
    reads_before = _store_reads(chaos, job_id)

    with ThreadPoolExecutor(max_workers=4) as pool:
        statuses = list(pool.map(lambda _: api.get(job_id)["status"], range(1000)))

    assert statuses == ["succeeded"] * 1000
    assert _store_reads(chaos, job_id) - reads_before <= 3


def test_a_job_polled_before_it_ran_shows_its_outcome_at_once_write_through(api, chaos):
    # The first poll finds no record and the cache keeps that "not found" for its TTL (5 min);
    # the worker's writes go through the cache, so they replace it, and polls never go stale.
    job_id = api.enqueue("echo", {"early": True}, delay_seconds=2)
    assert api.get(job_id)["status"] == "queued"

    job = api.wait(job_id, timeout=30)

    assert job["status"] == "succeeded"
    eventually_consistent_reads = [
        r for r in chaos.store_requests(job_id) if r["operation"] == "GetItem" and not r["consistent"]
    ]
    assert len(eventually_consistent_reads) <= 1  # the first poll's miss; every later poll was a hit


def test_the_local_stand_in_has_daxs_item_cache_semantics(deployed, chaos):
    table = settings.TABLE_NAME
    key = {"pk": {"S": f"cachetest#{uuid.uuid4().hex}"}}
    credentials = {k: deployed.aws_env[k.upper()] for k in ("aws_access_key_id", "aws_secret_access_key")}
    through_cache = boto3.client(
        "dynamodb", endpoint_url=chaos.cache_url, region_name=deployed.aws_env["AWS_DEFAULT_REGION"], **credentials
    )
    store = deployed.aws("dynamodb")

    # A miss is cached as "not found", so a write that bypasses the cache leaves it stale (until the TTL).
    assert "Item" not in through_cache.get_item(TableName=table, Key=key)
    store.put_item(TableName=table, Item=key | {"v": {"N": "1"}})
    assert "Item" not in through_cache.get_item(TableName=table, Key=key)
    # A strongly consistent read passes through.
    assert through_cache.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["v"] == {"N": "1"}

    # Write-through: the cache holds the updated item; the caller gets only what it asked for.
    updated = through_cache.update_item(
        TableName=table, Key=key, UpdateExpression="SET v = :two", ExpressionAttributeValues={":two": {"N": "2"}}
    )
    assert "Attributes" not in updated
    assert through_cache.get_item(TableName=table, Key=key)["Item"]["v"] == {"N": "2"}

    # A failed condition comes back without the old item (DAX does not return it), the cache unchanged.
    with pytest.raises(ClientError) as failed:
        through_cache.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET v = :three",
            ConditionExpression="v = :one",
            ExpressionAttributeValues={":one": {"N": "1"}, ":three": {"N": "3"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert failed.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert "Item" not in failed.value.response
    assert through_cache.get_item(TableName=table, Key=key)["Item"]["v"] == {"N": "2"}
