"""Operator keys: a credential of its own kind, for the platform's operators, never a tenant's.

An operator key (`co_...`) opens only the `/operator/` routes (queue depth, DLQ, workers);
a tenant key (`ck_...`) opens only `/v1/`. Only a SHA-256 of each key is stored, in the jobs
table beside the tenants' keys but under its own prefix, so neither kind can stand in for the
other. Keys have the tenant keys' format (a checksum checked before any I/O) and the same
two-cache lookup (shared/tenants/key_lookup.py). Minted by an operator with AWS credentials for the stack:

    python -m shared.tenants.operators --label "alice's laptop"
"""

from __future__ import annotations

from datetime import UTC, datetime

from shared import settings
from shared.store import tenant_items
from shared.tenants import api_keys
from shared.tenants.key_lookup import KeyLookup

KEY_PREFIX = "co_"


def create_key(label: str) -> str:
    """Mint an operator key; the plaintext is returned once and never stored."""
    operator_key = api_keys.mint(KEY_PREFIX)
    tenant_items.put_operator_key(api_keys.digest(operator_key), label, datetime.now(UTC).isoformat(timespec="seconds"))
    return operator_key


def revoke_key(operator_key: str) -> None:
    tenant_items.delete_operator_key(api_keys.digest(operator_key))
    _lookup.forget(operator_key)


_lookup = KeyLookup(KEY_PREFIX, tenant_items.operator_key_owner, lambda: float(settings.API_KEY_CACHE_SECONDS))


def is_operator(operator_key: str) -> bool:
    """Whether this is a live operator key; a malformed one costs no I/O, a flood of made-up ones a bounded cache."""
    return _lookup.owner(operator_key) is not None


def clear_cache() -> None:
    """Forget every cached lookup (tests)."""
    _lookup.clear()


def main() -> None:
    import argparse  # the command line only: the API imports this module on every cold start

    parser = argparse.ArgumentParser(description="Mint an operator key (printed once; only its hash is stored).")
    parser.add_argument("--label", default="", help="who or what holds it, for the audit trail")
    print(create_key(parser.parse_args().label))


if __name__ == "__main__":
    main()
