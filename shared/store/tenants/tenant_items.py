"""Tenant, API key and operator key items: their reads and writes. Only a SHA-256 of each key is stored.

- `tenant#<name>`: a tenant, with the limit overrides an operator set (`limits`, a map of
  name -> number); gsi1 partition `tenants`, sort key the name.
- `apikey#<sha256>`: a key of `tenant`, with its scope (none on a key minted before scopes), label,
  creation time, key id and last 4 characters; gsi1 partition `apikeys#<tenant>`, sort key
  `<created_at>#<key id>`.
- `operatorkey#<sha256>`: an operator key, `kind` = operator, with its label and expiry.

Low-level client: a key is looked up on API requests, and a tenant's limits on its enqueues
(docs/decisions/storage-idioms.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from shared.aws.clients import client, single_attempt_client
from shared.store import keys, table
from shared.store.conditional import conditional_delete, conditional_put

_OPERATOR = "operator"


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
    scope: str | None  # None: minted before scopes (shared/tenants/scopes.py `stored`)


class KeyOwner(NamedTuple):
    """What the API's request path reads of a key: its tenant and its scope as stored."""

    tenant: str
    scope: str | None


def _tenant_item_key(tenant: str) -> dict[str, Any]:
    return keys.item_key(keys.tenant_key(tenant))


def _query_index(partition: str) -> list[dict[str, Any]]:
    """Every item of one gsi1 partition."""
    return [item for page in table.partition_pages(partition) for item in page.get("Items", [])]


# Tenants ------------------------------------------------------------------------------------------


def _tenant_from_item(item: dict[str, Any]) -> Tenant:
    return Tenant(name=item["tenant"]["S"], created_at=item["created_at"]["S"])


def put_tenant(tenant: Tenant) -> bool:
    """Record a new tenant; False if one of that name exists."""
    return conditional_put(
        TableName=table.name(),
        Item={
            **_tenant_item_key(tenant.name),
            "tenant": {"S": tenant.name},
            "created_at": {"S": tenant.created_at},
            "gsi1pk": {"S": keys.TENANTS},
            "gsi1sk": {"S": tenant.name},
        },
        ConditionExpression="attribute_not_exists(pk)",
    )


def get_tenant(name: str) -> Tenant | None:
    item = (
        client("dynamodb").get_item(TableName=table.name(), Key=_tenant_item_key(name), ConsistentRead=True).get("Item")
    )
    return _tenant_from_item(item) if item else None


def list_tenants() -> list[Tenant]:
    return [_tenant_from_item(item) for item in _query_index(keys.TENANTS)]


# Limit overrides, on the tenant's item -------------------------------------------------------------


def limit_overrides(tenant: str, *, consistent: bool = False, single_attempt: bool = False) -> dict[str, float]:
    """The limits an operator set for the tenant, by name ({} for a tenant with no item). `single_attempt`:
    no retries, for a caller that has a default to fall back on."""
    params: dict[str, Any] = {"ConsistentRead": True} if consistent else {}
    dynamodb = single_attempt_client("dynamodb") if single_attempt else client("dynamodb")
    item = dynamodb.get_item(TableName=table.name(), Key=_tenant_item_key(tenant), **params).get("Item")
    overrides = (item or {}).get("limits", {}).get("M", {})
    return {name: float(value["N"]) for name, value in overrides.items()}


def set_limit_overrides(tenant: str, overrides: dict[str, float | int | None]) -> None:
    """Set (a number) or remove (None) limit overrides on the tenant's item: one write makes sure its
    `limits` map exists, a second changes the overrides in it."""
    dynamodb = client("dynamodb")
    dynamodb.update_item(
        TableName=table.name(),
        Key=_tenant_item_key(tenant),
        UpdateExpression="SET #l = if_not_exists(#l, :empty)",
        ExpressionAttributeNames={"#l": "limits"},
        ExpressionAttributeValues={":empty": {"M": {}}},
    )
    sets = [name for name, value in overrides.items() if value is not None]
    removes = [name for name, value in overrides.items() if value is None]
    if not sets and not removes:
        return
    names = {"#l": "limits"} | {f"#n{i}": name for i, name in enumerate(overrides)}
    index = {name: i for i, name in enumerate(overrides)}
    expression = ""
    if sets:
        expression += "SET " + ", ".join(f"#l.#n{index[name]} = :v{index[name]}" for name in sets)
    if removes:
        expression += " REMOVE " + ", ".join(f"#l.#n{index[name]}" for name in removes)
    params: dict[str, Any] = {}
    if sets:
        params["ExpressionAttributeValues"] = {f":v{index[name]}": {"N": str(overrides[name])} for name in sets}
    dynamodb.update_item(
        TableName=table.name(),
        Key=_tenant_item_key(tenant),
        UpdateExpression=expression.strip(),
        ExpressionAttributeNames=names,
        **params,
    )


# API keys -----------------------------------------------------------------------------------------


def put_api_key(digest: str, key: KeyInfo) -> None:
    """Record a new key (its digest: a key is never stored)."""
    client("dynamodb").put_item(
        TableName=table.name(),
        Item={
            **keys.item_key(keys.api_key_key(digest)),
            "tenant": {"S": key.tenant},
            "label": {"S": key.label},
            "created_at": {"S": key.created_at},
            "last4": {"S": key.last4},
            "key_id": {"S": key.key_id},
            **({} if key.scope is None else {"scope": {"S": key.scope}}),
            "gsi1pk": {"S": keys.api_keys_partition(key.tenant)},
            "gsi1sk": {"S": f"{key.created_at}#{key.key_id}"},
        },
        # A freshly minted key's digest names no item yet: the condition guards another key's item.
        ConditionExpression="attribute_not_exists(pk)",
    )


def _key_info(item: dict[str, Any]) -> KeyInfo:
    return KeyInfo(
        key_id=item["key_id"]["S"],
        tenant=item["tenant"]["S"],
        label=item.get("label", {}).get("S", ""),
        created_at=item["created_at"]["S"],
        last4=item["last4"]["S"],
        scope=item.get("scope", {}).get("S"),
    )


def list_api_keys(tenant: str) -> list[KeyInfo]:
    """The tenant's keys, oldest first (keys minted before listing existed are not indexed)."""
    return [_key_info(item) for item in _query_index(keys.api_keys_partition(tenant))]


def api_key_digest(tenant: str, key_id: str) -> str | None:
    """The digest of the tenant's key with this key id, if it has one."""
    for item in _query_index(keys.api_keys_partition(tenant)):
        if item["key_id"]["S"] == key_id:
            return keys.digest_of_api_key(item["pk"]["S"])
    return None


def delete_api_key(digest: str) -> str | None:
    """Delete the key's item; its tenant, or None if there was none."""
    old = conditional_delete(
        TableName=table.name(),
        Key=keys.item_key(keys.api_key_key(digest)),
        ConditionExpression="attribute_exists(pk)",
    )
    return None if old is None else old["tenant"]["S"]


def api_key_owner(digest: str) -> KeyOwner | None:
    """The tenant and scope of the key with this digest, or None (the API's request path: one eventually
    consistent read)."""
    item = client("dynamodb").get_item(TableName=table.name(), Key=keys.item_key(keys.api_key_key(digest))).get("Item")
    return KeyOwner(item["tenant"]["S"], item.get("scope", {}).get("S")) if item else None


# Operator keys ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OperatorKeyInfo:
    """What a listing shows of an operator key: never the key nor its hash."""

    key_id: str
    label: str
    created_at: str
    expires_at: str | None  # ISO 8601 UTC; None: it does not expire


def put_operator_key(digest: str, key_id: str, label: str, created_at: str, expires_at: str | None) -> None:
    item = {
        **keys.item_key(keys.operator_key_key(digest)),
        "kind": {"S": _OPERATOR},
        "key_id": {"S": key_id},
        "label": {"S": label},
        "created_at": {"S": created_at},
        "gsi1pk": {"S": keys.OPERATOR_KEYS},
        "gsi1sk": {"S": f"{created_at}#{key_id}"},
    }
    if expires_at is not None:
        item["expires_at_iso"] = {"S": expires_at}
    client("dynamodb").put_item(TableName=table.name(), Item=item, ConditionExpression="attribute_not_exists(pk)")


def list_operator_keys() -> list[OperatorKeyInfo]:
    """Every operator key, oldest first (keys minted before listing existed are not indexed)."""
    return [
        OperatorKeyInfo(
            key_id=item["key_id"]["S"],
            label=item.get("label", {}).get("S", ""),
            created_at=item.get("created_at", {}).get("S", ""),
            expires_at=item.get("expires_at_iso", {}).get("S"),
        )
        for item in _query_index(keys.OPERATOR_KEYS)
    ]


def operator_key_digest(key_id: str) -> str | None:
    """The digest of the operator key with this key id, if there is one."""
    for item in _query_index(keys.OPERATOR_KEYS):
        if item["key_id"]["S"] == key_id:
            return item["pk"]["S"].removeprefix(keys.OPERATOR_KEY)
    return None


def delete_operator_key(digest: str) -> None:
    client("dynamodb").delete_item(TableName=table.name(), Key=keys.item_key(keys.operator_key_key(digest)))


class LiveOperatorKey(NamedTuple):
    """An operator key found live in the store, with its expiry (ISO 8601 UTC; None: it does not expire),
    which its holder checks again on every use of a cached lookup (`has_expired`)."""

    expires_at: str | None

    def has_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= datetime.now(UTC).isoformat(timespec="seconds")


def operator_key_owner(digest: str) -> LiveOperatorKey | None:
    """The live operator key with this digest (not expired), or None (the operator routes' request path)."""
    item = (
        client("dynamodb")
        .get_item(TableName=table.name(), Key=keys.item_key(keys.operator_key_key(digest)))
        .get("Item")
    )
    if not item or item.get("kind", {}).get("S") != _OPERATOR:
        return None
    found = LiveOperatorKey(item.get("expires_at_iso", {}).get("S"))
    return None if found.has_expired() else found
