"""Event triggers on the store (shared/flow/triggers.py, docs/decisions/triggers.md).

- **A trigger**: `trigger#<tenant>#<name>`, with its `event`, `match` and `job` (JSON), `created_at`, and its place
  in the tenant's listing (gsi1 `triggers#<tenant>`, sorted by name). It holds a unit of the tenant's
  `max_triggers` quota: the quotas' transaction puts it (`as_item`).
- **The directory** of one event name: `eventtriggers#<tenant>#<digest of the name>`, a string set `names` of the
  triggers on it. An event reads it, then its triggers, each read strongly consistent: no index is read, so a
  trigger created a moment before an event is seen by it.

**Order keeps the directory a superset.** A create adds the name to the directory, puts the trigger (with its quota
unit), then adds the name again; a delete removes the trigger, then the name, then reads the trigger again and adds
the name back if a create of it on the same event landed meanwhile (shared/waits/triggers.py). So however a create
and a delete of one name interleave, a trigger is never missing from its directory. A name without its trigger (a
create refused at its quota or for a name taken, or cut short; a delete cut short) is skipped by the event that
finds it: it costs that event a key of its BatchGetItem, nothing more.

Cost: a create or a delete, the directory's write and the quota's transaction; an event, one read of its name's
directory (~100 bytes) at the API, which counts its names against the rate limit (`listed`), and one in the worker,
and where it names triggers, one BatchGetItem of them (per 100).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.aws.clients import client, single_attempt_client
from shared.errors import Unavailable
from shared.store import keys, table
from shared.store.table_schema import RUNS_INDEX

_BATCH_GET_MOST = 100  # BatchGetItem's bound
_BATCH_GET_TRIES = 5


def event_digest(event: str) -> str:
    """An event name's digest, as its directory's key holds it (a name may hold any character, `#` too)."""
    return hashlib.sha256(event.encode()).hexdigest()[:32]


def key_of(tenant: str, name: str) -> dict[str, Any]:
    return keys.item_key(keys.trigger_key(tenant, name))


def _directory_key(tenant: str, event: str) -> dict[str, Any]:
    return keys.item_key(keys.event_triggers_key(tenant, event_digest(event)))


def as_item(tenant: str, trigger: dict[str, Any], created_at: float) -> dict[str, Any]:
    """A trigger's item, for the quota's transaction to put: `trigger` holds its name, event, match and job."""
    return key_of(tenant, trigger["name"]) | {
        "tenant": {"S": tenant},
        "name": {"S": trigger["name"]},
        "event": {"S": trigger["event"]},
        "match_json": {"S": json.dumps(trigger.get("match"), separators=(",", ":"))},
        "job_json": {"S": json.dumps(trigger["job"], separators=(",", ":"))},
        "created_at": {"N": repr(created_at)},
        "gsi1pk": {"S": keys.triggers_partition(tenant)},
        "gsi1sk": {"S": trigger["name"]},
    }


def _trigger_of(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": item["name"]["S"],
        "event": item["event"]["S"],
        "match": json.loads(item["match_json"]["S"]),
        "job": json.loads(item["job_json"]["S"]),
        "created_at": float(item["created_at"]["N"]),
    }


def list_in_directory(tenant: str, event: str, name: str) -> None:
    """Add `name` to the directory of `event` (before its trigger is put)."""
    _directory_change(tenant, event, "ADD", name)


def unlist_from_directory(tenant: str, event: str, name: str) -> None:
    """Remove `name` from the directory of `event` (after its trigger is deleted, or was never put)."""
    _directory_change(tenant, event, "DELETE", name)


def _directory_change(tenant: str, event: str, action: str, name: str) -> None:
    client("dynamodb").update_item(
        TableName=table.name(),
        Key=_directory_key(tenant, event),
        UpdateExpression=f"{action} #names :name",
        ExpressionAttributeNames={"#names": "names"},  # a reserved word
        ExpressionAttributeValues={":name": {"SS": [name]}},
    )


def get(tenant: str, name: str) -> dict[str, Any] | None:
    """The tenant's trigger `name`, or None (strongly consistent)."""
    item = (
        client("dynamodb").get_item(TableName=table.name(), Key=key_of(tenant, name), ConsistentRead=True).get("Item")
    )
    return _trigger_of(item) if item else None


def listed(tenant: str, event: str) -> int | None:
    """How many names the directory of `event` lists: at most the jobs an event of that name starts (a name whose
    trigger is gone counts too). Eventually consistent, one attempt: what the API charges an event for, not what
    it starts. None when the store does not answer."""
    try:
        answer = single_attempt_client("dynamodb").get_item(TableName=table.name(), Key=_directory_key(tenant, event))
    except (ClientError, BotoCoreError):
        return None
    return len(answer.get("Item", {}).get("names", {}).get("SS", []))


def on_event(tenant: str, event: str) -> list[dict[str, Any]]:
    """The tenant's triggers on `event`, by name: those its directory lists and that exist (strongly consistent).
    Raises Unavailable if some stay unread after a few tries: the event's job fails and runs again, never starting
    fewer jobs than its triggers."""
    directory = (
        client("dynamodb")
        .get_item(TableName=table.name(), Key=_directory_key(tenant, event), ConsistentRead=True)
        .get("Item")
    )
    names = sorted((directory or {}).get("names", {}).get("SS", []))
    found: list[dict[str, Any]] = []
    for start in range(0, len(names), _BATCH_GET_MOST):
        found += _read_all([key_of(tenant, name) for name in names[start : start + _BATCH_GET_MOST]])
    triggers = [_trigger_of(item) for item in found]
    return sorted((trigger for trigger in triggers if trigger["event"] == event), key=lambda trigger: trigger["name"])


def _read_all(wanted_keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    request: dict[str, Any] = {table.name(): {"Keys": wanted_keys, "ConsistentRead": True}}
    for _ in range(_BATCH_GET_TRIES):  # unprocessed keys (throttling) are asked again, a few times
        answer = client("dynamodb").batch_get_item(RequestItems=request)
        found += answer.get("Responses", {}).get(table.name(), [])
        request = answer.get("UnprocessedKeys") or {}
        if not request:
            return found
    raise Unavailable(f"{len(request[table.name()]['Keys'])} triggers stayed unread after {_BATCH_GET_TRIES} tries")


def page(tenant: str, limit: int, after: str | None) -> tuple[list[dict[str, Any]], bool]:
    """Up to `limit` of the tenant's triggers by name, after the one named `after`; and whether the index has more
    after them."""
    params: dict[str, Any] = {
        "TableName": table.name(),
        "IndexName": RUNS_INDEX.name,
        "KeyConditionExpression": f"{RUNS_INDEX.partition_key} = :pk",
        "ExpressionAttributeValues": {":pk": {"S": keys.triggers_partition(tenant)}},
        "Limit": limit,
    }
    if after is not None:
        params["ExclusiveStartKey"] = key_of(tenant, after) | {
            "gsi1pk": {"S": keys.triggers_partition(tenant)},
            "gsi1sk": {"S": after},
        }
    answer = client("dynamodb").query(**params)
    return [_trigger_of(item) for item in answer["Items"]], "LastEvaluatedKey" in answer


def count(tenant: str) -> int:
    """The tenant's triggers, counted on the index without reading them out (a recount's)."""
    return sum(page["Count"] for page in table.partition_pages(keys.triggers_partition(tenant), Select="COUNT"))
