"""The secret that signs job ids: one per deployment, kept in the jobs table.

The first function instance that needs it creates it (a conditional put, so
concurrent cold starts agree on one); every instance caches it for its lifetime.
"""

from __future__ import annotations

import base64
import os
from functools import cache

from botocore.exceptions import ClientError

from shared import environment
from shared.aws.clients import client

_ITEM_KEY = {"pk": {"S": "config#job-id-signing-key"}}


@cache
def id_secret() -> bytes:
    dynamodb = client("dynamodb")
    table = environment.current().table
    item = dynamodb.get_item(TableName=table, Key=_ITEM_KEY, ConsistentRead=True).get("Item")
    if item is None:
        try:
            dynamodb.put_item(
                TableName=table,
                Item={**_ITEM_KEY, "secret": {"S": base64.b64encode(os.urandom(32)).decode()}},
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        item = dynamodb.get_item(TableName=table, Key=_ITEM_KEY, ConsistentRead=True)["Item"]
    return base64.b64decode(item["secret"]["S"])
