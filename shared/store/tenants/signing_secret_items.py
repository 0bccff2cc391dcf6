"""A tenant's HTTP signing secrets: one item per tenant (`signing-secrets#<tenant>`), versioned.

The item holds the list of secrets, newest first, and a `version` that every write raises by one
and conditions on, so two rotations racing cannot both replace the list. Low-level client: the
worker reads it (through a short cache) before each HTTP job it signs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.aws.clients import client
from shared.store import keys, table
from shared.store.conditional import conditional_put


@dataclass(frozen=True)
class SigningSecret:
    id: str
    secret: str
    created_at: float
    expires_at: float | None = None  # None: current; otherwise valid until then (rotated out)
    destination: str | None = None  # an origin ("https://host[:port]") it alone signs for; None: every other
    # False: its set's next secret, which signs already but is shown to nobody until a rotation issues it.
    issued: bool = True
    # From when every worker signs with it (it was written then less the workers' cache time); None: a
    # secret written before this was recorded, long signing.
    signs_from: float | None = None
    # The rotation that made it, if it was given an idempotency key: (the key's fingerprint, the request's).
    rotation: tuple[str, str] | None = None

    def valid_at(self, now: float) -> bool:
        return self.expires_at is None or self.expires_at > now

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "secret": self.secret,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "destination": self.destination,
        }


def _key(tenant: str) -> dict[str, Any]:
    return keys.item_key(keys.signing_secrets_key(tenant))


def _to_value(secret: SigningSecret) -> dict[str, Any]:
    value: dict[str, Any] = {
        "id": {"S": secret.id},
        "secret": {"S": secret.secret},
        "created_at": {"N": repr(secret.created_at)},
    }
    if secret.expires_at is not None:
        value["expires_at"] = {"N": repr(secret.expires_at)}
    if secret.destination is not None:
        value["destination"] = {"S": secret.destination}
    if not secret.issued:
        value["issued"] = {"BOOL": False}
    if secret.signs_from is not None:
        value["signs_from"] = {"N": repr(secret.signs_from)}
    if secret.rotation is not None:
        value["rotation_key"], value["rotation_request"] = ({"S": part} for part in secret.rotation)
    return {"M": value}


def _from_value(value: dict[str, Any]) -> SigningSecret:
    fields = value["M"]
    return SigningSecret(
        id=fields["id"]["S"],
        secret=fields["secret"]["S"],
        created_at=float(fields["created_at"]["N"]),
        expires_at=float(fields["expires_at"]["N"]) if "expires_at" in fields else None,
        destination=fields["destination"]["S"] if "destination" in fields else None,
        issued=fields.get("issued", {"BOOL": True})["BOOL"],
        signs_from=float(fields["signs_from"]["N"]) if "signs_from" in fields else None,
        rotation=(fields["rotation_key"]["S"], fields["rotation_request"]["S"]) if "rotation_key" in fields else None,
    )


def read(tenant: str) -> tuple[list[SigningSecret], int] | None:
    """The tenant's secrets and the item's version (a consistent read); None if it has no item yet."""
    item = client("dynamodb").get_item(TableName=table.name(), Key=_key(tenant), ConsistentRead=True).get("Item")
    if item is None:
        return None
    return [_from_value(value) for value in item["secrets"]["L"]], int(item["version"]["N"])


def write(tenant: str, secrets: list[SigningSecret], version: int | None) -> bool:
    """Replace the list if nobody else changed it since `version` (None: the item must not exist yet).
    False if someone did."""
    condition = "attribute_not_exists(pk)" if version is None else "version = :seen"
    values: dict[str, Any] = {} if version is None else {":seen": {"N": str(version)}}
    return conditional_put(
        TableName=table.name(),
        Item={
            **_key(tenant),
            "secrets": {"L": [_to_value(secret) for secret in secrets]},
            "version": {"N": str((version or 0) + 1)},
        },
        ConditionExpression=condition,
        **({"ExpressionAttributeValues": values} if values else {}),
    )
