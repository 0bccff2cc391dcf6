"""Tenants and their API keys, in the jobs table. Only a SHA-256 of each key is stored.

Items (one table, the `gsi1` index lists them; it projects every attribute):
- `tenant#<name>`: a tenant (gsi1pk `tenants`, gsi1sk the name);
- `apikey#<sha256>`: a key of `tenant`, with its label, creation time and last 4 characters
  (gsi1pk `apikeys#<tenant>`, gsi1sk `<created_at>#<key id>`).

Looking a key up (every API request) is shared/tenants/key_lookup.py: a checksum check, then two caches
(real keys, and a bounded LRU of unknown ones), then one GetItem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from shared import environment
from shared.aws.clients import client
from shared.errors import CorralError
from shared.tenants import api_keys
from shared.tenants.key_lookup import KeyLookup

TENANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TENANTS_INDEX_KEY = "tenants"


class TenantError(CorralError, ValueError):
    """An operator request that cannot be done (unknown tenant, name taken, unknown key)."""


@dataclass(frozen=True)
class Tenant:
    name: str
    created_at: str


@dataclass(frozen=True)
class KeyInfo:
    """What a listing shows of a key: never the key nor its hash."""

    key_id: str
    tenant: str
    label: str
    created_at: str
    last4: str


def _table() -> str:
    return environment.current().table


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")  # also orders keys in a listing


def check_tenant_name(name: str) -> str:
    if not TENANT_NAME.fullmatch(name):
        raise TenantError(
            f"invalid tenant name {name!r}: 1-64 characters, letters, digits, '.', '_' or '-', not starting with a sign"
        )
    return name


# Tenants ------------------------------------------------------------------------------------------


def create_tenant(name: str, *, exist_ok: bool = False) -> Tenant:
    check_tenant_name(name)
    tenant = Tenant(name=name, created_at=_now_iso())
    try:
        client("dynamodb").put_item(
            TableName=_table(),
            Item={
                "pk": {"S": f"tenant#{name}"},
                "tenant": {"S": name},
                "created_at": {"S": tenant.created_at},
                "gsi1pk": {"S": _TENANTS_INDEX_KEY},
                "gsi1sk": {"S": name},
            },
            ConditionExpression="attribute_not_exists(pk)",
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if not exist_ok:
            raise TenantError(f"tenant {name!r} exists already") from None
        found = get_tenant(name)
        return found or tenant
    return tenant


def get_tenant(name: str) -> Tenant | None:
    item = (
        client("dynamodb")
        .get_item(TableName=_table(), Key={"pk": {"S": f"tenant#{name}"}}, ConsistentRead=True)
        .get("Item")
    )
    return Tenant(name=item["tenant"]["S"], created_at=item["created_at"]["S"]) if item else None


def _query_index(dynamodb: Any, partition: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {
        "TableName": _table(),
        "IndexName": "gsi1",
        "KeyConditionExpression": "gsi1pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": partition}},
    }
    for _ in range(1000):  # pages of up to 1 MB: far more tenants or keys than anyone has
        page = dynamodb.query(**params)
        items += page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            break
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return items


def list_tenants() -> list[Tenant]:
    items = _query_index(client("dynamodb"), _TENANTS_INDEX_KEY)
    return [Tenant(name=item["tenant"]["S"], created_at=item["created_at"]["S"]) for item in items]


# Keys ---------------------------------------------------------------------------------------------


def _pk(api_key: str) -> str:
    return "apikey#" + api_keys.digest(api_key)


def create_key(tenant: str, label: str = "") -> str:
    """Mint a key for `tenant` (creating the tenant if it has no record yet); the plaintext is
    returned once and never stored."""
    ddb = client("dynamodb")
    create_tenant(tenant, exist_ok=True)
    api_key = api_keys.mint()
    created_at = _now_iso()
    key_id = api_keys.key_id(api_key)
    ddb.put_item(
        TableName=_table(),
        Item={
            "pk": {"S": _pk(api_key)},
            "tenant": {"S": tenant},
            "label": {"S": label},
            "created_at": {"S": created_at},
            "last4": {"S": api_key[-4:]},
            "key_id": {"S": key_id},
            "gsi1pk": {"S": f"apikeys#{tenant}"},
            "gsi1sk": {"S": f"{created_at}#{key_id}"},
        },
        ConditionExpression="attribute_not_exists(pk)",
    )
    return api_key


def list_keys(tenant: str) -> list[KeyInfo]:
    """The tenant's keys, oldest first (keys minted before listing existed are not indexed)."""
    return [
        KeyInfo(
            key_id=item["key_id"]["S"],
            tenant=item["tenant"]["S"],
            label=item.get("label", {}).get("S", ""),
            created_at=item["created_at"]["S"],
            last4=item["last4"]["S"],
        )
        for item in _query_index(client("dynamodb"), f"apikeys#{tenant}")
    ]


@dataclass(frozen=True)
class Revoked:
    key_id: str
    tenant: str
    keys_left: int  # the tenant's indexed keys after this one


def revoke_key(key: str, *, tenant: str | None = None) -> Revoked:
    """Delete a key, given the key itself or its key id (then `tenant` is needed to find it).

    It stops working once the API instances' caches expire it: within `API_KEY_CACHE_SECONDS`.
    """
    ddb = client("dynamodb")
    if api_keys.shape(key) is not None:
        pk = _pk(key)
    else:
        if tenant is None:
            raise TenantError("revoking by key id needs the tenant (--tenant)")
        pk = "apikey#" + _full_digest(ddb, tenant, key)
    try:
        old = ddb.delete_item(
            TableName=_table(),
            Key={"pk": {"S": pk}},
            ConditionExpression="attribute_exists(pk)",
            ReturnValues="ALL_OLD",
        )["Attributes"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        raise TenantError("no such key (revoked already?)") from None
    owner = old["tenant"]["S"]
    return Revoked(key_id=pk.removeprefix("apikey#")[:12], tenant=owner, keys_left=len(list_keys(owner)))


def _full_digest(dynamodb: Any, tenant: str, key_id: str) -> str:
    for item in _query_index(dynamodb, f"apikeys#{tenant}"):
        if item["key_id"]["S"] == key_id:
            return item["pk"]["S"].removeprefix("apikey#")
    raise TenantError(f"tenant {tenant!r} has no key with id {key_id!r}")


# Lookup (the API's request path) ------------------------------------------------------------------


def _known_key_seconds() -> float:
    return environment.current().api_key_cache_seconds


def _read_key_item(digest: str) -> dict[str, Any] | None:
    return client("dynamodb").get_item(TableName=_table(), Key={"pk": {"S": "apikey#" + digest}}).get("Item")


_lookup = KeyLookup(api_keys.PREFIX, _read_key_item, lambda item: item["tenant"]["S"], _known_key_seconds)


def tenant_for(api_key: str) -> str | None:
    """The tenant a key belongs to, or None; malformed keys and bad checksums cost no I/O."""
    return _lookup.owner(api_key)


def clear_caches() -> None:
    """Forget every cached lookup (tests)."""
    _lookup.clear()


def schedule_count(tenant: str) -> int:
    """The tenant's schedules: they keep firing whatever happens to its keys (docs/architecture.md)."""
    return len(_query_index(client("dynamodb"), f"schedules#{tenant}"))
