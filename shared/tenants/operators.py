"""Operator keys: a credential of its own kind, for the platform's operators, never a tenant's.

An operator key (`co_...`) opens only the `/operator/` routes (queue depth, DLQ, workers);
a tenant key (`ck_...`) opens only `/v1/`. Only a SHA-256 of each key is stored, in the jobs
table beside the tenants' keys but under its own prefix, so neither kind can stand in for the
other. Keys have the tenant keys' format (a checksum checked before any I/O) and the same
two-cache lookup (shared/tenants/key_lookup.py). Minted by an operator with AWS credentials for the stack:

    python -m shared.tenants.operators --label "alice's laptop"
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared import environment
from shared.errors import InvalidRequest
from shared.store.tenants import tenant_items
from shared.tenants import api_keys
from shared.tenants.key_lookup import KeyLookup

KEY_PREFIX = "co_"
MAX_EXPIRY_DAYS = 3650


def create_key(label: str, *, expires_in_days: float | None = None) -> str:
    """Mint an operator key; the plaintext is returned once and never stored. `expires_in_days`:
    the key stops opening the operator routes after that long (None: until it is revoked)."""
    if expires_in_days is not None and not 0 < expires_in_days <= MAX_EXPIRY_DAYS:
        raise InvalidRequest("expires_in_days", f"must be more than 0 and at most {MAX_EXPIRY_DAYS}")
    operator_key = api_keys.mint(KEY_PREFIX)
    now = datetime.now(UTC)
    expires_at = (
        None if expires_in_days is None else (now + timedelta(days=expires_in_days)).isoformat(timespec="seconds")
    )
    tenant_items.put_operator_key(
        api_keys.digest(operator_key),
        api_keys.key_id(operator_key),
        label,
        now.isoformat(timespec="seconds"),
        expires_at,
    )
    return operator_key


def list_keys() -> list[tenant_items.OperatorKeyInfo]:
    """Every operator key: id, label, created, expiry (never the key)."""
    return tenant_items.list_operator_keys()


def revoke(key_id: str) -> bool:
    """Revoke the operator key with this key id; False if there is none. An API instance that has it
    cached stops accepting it within the key cache's bound."""
    digest = tenant_items.operator_key_digest(key_id)
    if digest is None:
        return False
    tenant_items.delete_operator_key(digest)
    return True


def revoke_key(operator_key: str) -> None:
    """Revoke a key its holder presents (this process forgets it at once)."""
    tenant_items.delete_operator_key(api_keys.digest(operator_key))
    _lookup.forget(operator_key)


_lookup: KeyLookup[tenant_items.LiveOperatorKey] = KeyLookup(
    KEY_PREFIX, tenant_items.operator_key_owner, lambda: environment.current().api_key_cache_seconds
)


def is_operator(operator_key: str) -> bool:
    """Whether this is a live operator key; a malformed one costs no I/O, a flood of made-up ones a bounded cache.

    The expiry is checked on every use, the cached lookup's too: a key stops working the second it
    expires, on every instance, with no store read (revocation waits for the cache time instead)."""
    found = _lookup.owner(operator_key)
    return found is not None and not found.has_expired()


def clear_cache() -> None:
    """Forget every cached lookup (tests)."""
    _lookup.clear()


def main() -> None:
    import argparse  # the command line only: the API imports this module on every cold start

    parser = argparse.ArgumentParser(description="Mint an operator key (printed once; only its hash is stored).")
    parser.add_argument("--label", default="", help="who or what holds it, for the audit trail")
    parser.add_argument("--expires-in-days", type=float, default=None, help="the key stops working after this long")
    args = parser.parse_args()
    print(create_key(args.label, expires_in_days=args.expires_in_days))


if __name__ == "__main__":
    main()
