"""Operator keys: a credential of its own kind, for the platform's operators, never a tenant's.

An operator key (`co_...`) opens only the `/operator/` routes (queue depth, DLQ, workers);
a tenant key (`ck_...`) opens only `/v1/`. Only a SHA-256 of each key is stored, in the jobs
table beside the tenants' keys but under its own prefix, so neither kind can stand in for the
other. Minted by an operator with AWS credentials for the stack:

    python -m shared.operators --label "alice's laptop"
"""

from __future__ import annotations

import argparse
import hashlib
import secrets
import time
from datetime import UTC, datetime

from shared import settings
from shared.aws import client

KEY_PREFIX = "co_"
_CACHE_SECONDS = 60
_cache: dict[str, tuple[bool, float]] = {}
_CACHE_LIMIT = 1_000


def _pk(operator_key: str) -> str:
    return "operatorkey#" + hashlib.sha256(operator_key.encode()).hexdigest()


def _table() -> str:
    return settings.env("CORRAL_TABLE", settings.TABLE_NAME)


def create_key(label: str) -> str:
    """Mint an operator key; the plaintext is returned once and never stored."""
    operator_key = KEY_PREFIX + secrets.token_urlsafe(32)
    client("dynamodb").put_item(
        TableName=_table(),
        Item={
            "pk": {"S": _pk(operator_key)},
            "kind": {"S": "operator"},
            "label": {"S": label},
            "created_at": {"S": datetime.now(UTC).isoformat(timespec="seconds")},
        },
        ConditionExpression="attribute_not_exists(pk)",
    )
    return operator_key


def revoke_key(operator_key: str) -> None:
    client("dynamodb").delete_item(TableName=_table(), Key={"pk": {"S": _pk(operator_key)}})
    _cache.pop(_pk(operator_key), None)


def is_operator(operator_key: str) -> bool:
    if not operator_key.startswith(KEY_PREFIX):
        return False
    pk = _pk(operator_key)
    now = time.monotonic()
    cached = _cache.get(pk)
    if cached and cached[1] > now:
        return cached[0]
    item = client("dynamodb").get_item(TableName=_table(), Key={"pk": {"S": pk}}).get("Item")
    known = bool(item) and item.get("kind", {}).get("S") == "operator"
    if len(_cache) > _CACHE_LIMIT:  # made-up keys must not grow memory without bound
        _cache.clear()
    _cache[pk] = (known, now + _CACHE_SECONDS)
    return known


def main() -> None:
    parser = argparse.ArgumentParser(description="Mint an operator key (printed once; only its hash is stored).")
    parser.add_argument("--label", default="", help="who or what holds it, for the audit trail")
    print(create_key(parser.parse_args().label))


if __name__ == "__main__":
    main()
