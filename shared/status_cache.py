"""Where job-status reads and writes go: the status cache in front of the store.

In AWS that is DAX (`CORRAL_DAX_ENDPOINT`, set by the stack where the cluster
exists). Locally it is `local/status_cache.py`, a stand-in with DAX's item-cache
semantics (`CORRAL_STATUS_CACHE_ENDPOINT`). Elsewhere job items go straight to
DynamoDB. Every job-status write goes through this one client: DAX's item cache
is write-through, so a write that bypassed it would leave polls stale for the
cache's TTL. See docs/architecture.md "Status cache and faults".
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from shared.aws import client

DAX_ENDPOINT_ENV = "CORRAL_DAX_ENDPOINT"
LOCAL_CACHE_ENDPOINT_ENV = "CORRAL_STATUS_CACHE_ENDPOINT"


@cache
def jobs_client() -> Any:
    """A boto3-compatible low-level DynamoDB client: DAX, the local stand-in, or DynamoDB itself."""
    dax_endpoint = os.environ.get(DAX_ENDPOINT_ENV)
    if dax_endpoint:
        # Imported here so functions without DAX (the API's cold start, local runs) don't pay for it.
        from amazondax import AmazonDaxClient

        return AmazonDaxClient(endpoint_url=dax_endpoint, region_name=os.environ.get("AWS_REGION"))
    local_endpoint = os.environ.get(LOCAL_CACHE_ENDPOINT_ENV)
    if local_endpoint:
        return client("dynamodb", local_endpoint)
    return client("dynamodb")
