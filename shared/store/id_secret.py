"""The secret that signs job ids: one per deployment, kept in the jobs table.

The first function instance that needs it creates it (a conditional put, so
concurrent cold starts agree on one); every instance caches it for its lifetime.
"""

from __future__ import annotations

import base64
import os
from functools import cache

from shared import environment
from shared.aws.clients import client
from shared.store import keys
from shared.store.conditional import conditional_put

_ITEM_KEY = keys.item_key(keys.config_key(keys.JOB_ID_SIGNING_KEY))


@cache
def id_secret() -> bytes:
    dynamodb = client("dynamodb")
    table = environment.current().table
    item = dynamodb.get_item(TableName=table, Key=_ITEM_KEY, ConsistentRead=True).get("Item")
    if item is None:
        # A concurrent cold start may put its own first: either way, the one stored is read back.
        conditional_put(
            TableName=table,
            Item={**_ITEM_KEY, "secret": {"S": base64.b64encode(os.urandom(32)).decode()}},
            ConditionExpression="attribute_not_exists(pk)",
        )
        item = dynamodb.get_item(TableName=table, Key=_ITEM_KEY, ConsistentRead=True)["Item"]
    return base64.b64decode(item["secret"]["S"])
