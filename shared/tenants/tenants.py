"""Tenants and their API keys: names, minting, listing and revoking. Only a SHA-256 of each key is stored
(the items: shared/store/tenants/tenant_items.py).

Looking a key up (every API request) is shared/tenants/key_lookup.py: a checksum check, then two caches
(real keys, and a bounded LRU of unknown ones), then one GetItem. What a key may do is its scope
(shared/tenants/scopes.py).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from shared import environment
from shared.errors import CorralError
from shared.store.tenants import tenant_items
from shared.store.tenants.tenant_items import KeyInfo, Tenant
from shared.tenants import api_keys, scopes
from shared.tenants.key_lookup import KeyLookup
from shared.tenants.scopes import Scope

TENANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class TenantError(CorralError, ValueError):
    """An operator request that cannot be done (unknown tenant, name taken, unknown key)."""


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
    if not tenant_items.put_tenant(tenant):
        if not exist_ok:
            raise TenantError(f"tenant {name!r} exists already")
        found = get_tenant(name)
        return found or tenant
    return tenant


def get_tenant(name: str) -> Tenant | None:
    return tenant_items.get_tenant(name)


def list_tenants() -> list[Tenant]:
    return tenant_items.list_tenants()


# Keys ---------------------------------------------------------------------------------------------


def create_key(tenant: str, label: str = "", scope: Scope = scopes.DEFAULT) -> str:
    """Mint a key of `scope` for `tenant` (creating the tenant if it has no record yet); the plaintext is
    returned once and never stored."""
    create_tenant(tenant, exist_ok=True)
    api_key = api_keys.mint()
    info = KeyInfo(
        key_id=api_keys.key_id(api_key),
        tenant=tenant,
        label=label,
        created_at=_now_iso(),
        last4=api_key[-4:],
        scope=Scope(scope).value,
    )
    tenant_items.put_api_key(api_keys.digest(api_key), info)
    return api_key


def list_keys(tenant: str) -> list[KeyInfo]:
    """The tenant's keys, oldest first, each with its scope (keys minted before listing existed are not indexed)."""
    return [dataclasses.replace(info, scope=scopes.stored(info.scope)) for info in tenant_items.list_api_keys(tenant)]


@dataclass(frozen=True)
class Revoked:
    key_id: str
    tenant: str
    keys_left: int  # the tenant's indexed keys after this one


def revoke_key(key: str, *, tenant: str | None = None) -> Revoked:
    """Delete a key, given the key itself or its key id (then `tenant` is needed to find it).

    It stops working once the API instances' caches expire it: within `API_KEY_CACHE_SECONDS`.
    """
    if key.startswith(api_keys.PREFIX):  # the key itself, even one of the earliest, without a checksum
        digest = api_keys.digest(key)
    else:
        if tenant is None:
            raise TenantError("revoking by key id needs the tenant (--tenant)")
        found = tenant_items.api_key_digest(tenant, key)
        if found is None:
            raise TenantError(f"tenant {tenant!r} has no key with id {key!r}")
        digest = found
    owner = tenant_items.delete_api_key(digest)
    if owner is None:
        raise TenantError("no such key (revoked already?)")
    return Revoked(key_id=digest[:12], tenant=owner, keys_left=len(list_keys(owner)))


# Lookup (the API's request path) ------------------------------------------------------------------


def _known_key_seconds() -> float:
    return environment.current().api_key_cache_seconds


class KeyOwner(NamedTuple):
    """Whose a key is, and what it may do."""

    tenant: str
    scope: str  # a Scope's value; one this code does not know opens nothing (scopes.opens)


def _read_owner(digest: str) -> KeyOwner | None:
    found = tenant_items.api_key_owner(digest)
    return None if found is None else KeyOwner(found.tenant, scopes.stored(found.scope))


_lookup: KeyLookup[KeyOwner] = KeyLookup(api_keys.PREFIX, _read_owner, _known_key_seconds)


def owner_of(api_key: str) -> KeyOwner | None:
    """The tenant and scope of a key, or None; malformed keys and bad checksums cost no I/O."""
    return _lookup.owner(api_key)


def tenant_for(api_key: str) -> str | None:
    """The tenant a key belongs to, or None."""
    owner = owner_of(api_key)
    return None if owner is None else owner.tenant


def clear_caches() -> None:
    """Forget every cached lookup (tests)."""
    _lookup.clear()


def schedule_count(tenant: str) -> int:
    """The tenant's schedules: they keep firing whatever happens to its keys (docs/decisions/api-keys.md)."""
    # Imported here: the schedule records' module loads pynamodb, which no API key lookup needs.
    from shared.store.schedules import schedule_items

    return schedule_items.count(tenant)
