"""Where job-status reads and writes go: the status cache in front of the store.

In AWS that is DAX (`FunctionEnv.dax_endpoint`, set by the stack where the cluster
exists). Locally it is `local/dax_standin.py`, a stand-in with DAX's item-cache
semantics (`status_cache_endpoint`). Elsewhere job items go straight to
DynamoDB. Every job-status write goes through this one client: DAX's item cache
is write-through, so a write that bypassed it would leave polls stale for the
cache's TTL. See docs/decisions/status-cache.md.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from shared import environment
from shared.aws.clients import client, single_attempt_client


def jobs_client(single_attempt: bool = False) -> Any:
    """A boto3-compatible low-level DynamoDB client: DAX, the local stand-in, or DynamoDB itself.

    `single_attempt`: no botocore retries (DAX's client keeps its own)."""
    dax_endpoint = environment.current().dax_endpoint
    if dax_endpoint:
        return _dax_client(dax_endpoint)
    make = single_attempt_client if single_attempt else client
    local_endpoint = environment.current().status_cache_endpoint
    return make("dynamodb", local_endpoint) if local_endpoint else make("dynamodb")


@cache
def _dax_client(endpoint: str) -> Any:
    # Imported here so functions without DAX (the API's cold start, local runs) don't pay for it.
    # The client discovers the cluster's nodes when created, so it is created once per process.
    from amazondax import AmazonDaxClient

    return AmazonDaxClient(endpoint_url=endpoint, region_name=os.environ.get("AWS_REGION"))
