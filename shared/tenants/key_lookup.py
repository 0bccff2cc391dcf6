"""Looking up a key on every API request: a checksum check, then two caches, then one GetItem.

Real keys live in their own cache, which only keys found in the store enter, so its size is bounded
by the number of real keys and nothing a caller sends can evict one. Unknown (well-formed) keys sit
in a bounded LRU beside it, so a flood of made-up keys costs one read each at most per
UNKNOWN_KEY_CACHE_SECONDS and never grows memory without bound. Tenant keys (shared/tenants/tenants.py) and
operator keys (shared/tenants/operators.py) each have one.

A known key whose cache time ran out is answered from the cache and re-read in the background
(shared/refresh.py): the request never waits for the store, and a store blip costs it nothing. While
the re-reads fail, the key keeps working up to STALE_KNOWN_SECONDS past its cache time; after that a
request reads it itself, and an outage shows. Revocation takes effect with the re-read that follows
the cache time: within that time plus one request.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, NamedTuple, TypeVar

from shared.refresh import Refresher
from shared.tenants import api_keys

UNKNOWN_KEYS_CACHED = 10_000
UNKNOWN_KEY_CACHE_SECONDS = 10  # a key created a moment ago starts working within this
# While the store fails, a known key whose cache time ran out keeps working this long past it: a store
# blip must not fail the enqueues, which otherwise never touch the store.
STALE_KNOWN_SECONDS = 15 * 60


Owner = TypeVar("Owner")  # what the store says of a key: its tenant and scope, an operator key's expiry


class Known(NamedTuple, Generic[Owner]):
    owner: Owner
    fresh_until: float  # time.monotonic(): re-read after this
    stale_until: float  # served while the re-reads fail until this; then read on the request's path


class KeyLookup(Generic[Owner]):
    """Whom a key of one kind (`prefix`) belongs to; `read_owner(digest)` reads it from the store."""

    def __init__(
        self,
        prefix: str,
        read_owner: Callable[[str], Owner | None],
        known_seconds: Callable[[], float],
    ) -> None:
        self.prefix = prefix
        self.unknown_limit = UNKNOWN_KEYS_CACHED
        self._read_owner = read_owner
        self._known_seconds = known_seconds
        self.known: dict[str, Known[Owner]] = {}  # by key digest
        self.unknown: OrderedDict[str, float] = OrderedDict()  # key digest -> cached until, LRU first
        self.refresher = Refresher(f"{prefix}-keys")

    def owner(self, key: str) -> Owner | None:
        """The key's owner, or None; malformed keys and bad checksums cost no I/O."""
        if not api_keys.is_well_formed(key, self.prefix):
            return None
        digest = api_keys.digest(key)
        now = time.monotonic()
        known = self.known.get(digest)
        if known is not None and known.stale_until > now:
            if known.fresh_until <= now:
                self.refresher.start(digest, lambda: self._read(digest))
            return known.owner
        unknown_until = self.unknown.get(digest)
        if unknown_until is not None:
            if unknown_until > now:
                self.unknown.move_to_end(digest)
                return None
            del self.unknown[digest]
        return self._read(digest)

    def _read(self, digest: str) -> Owner | None:
        """Read the key's owner and cache what the store says; a failed read raises and changes nothing."""
        owner = self._read_owner(digest)
        now = time.monotonic()
        if owner is not None:
            fresh_until = now + self._known_seconds()
            self.known[digest] = Known(owner, fresh_until, fresh_until + STALE_KNOWN_SECONDS)
            return owner
        self.known.pop(digest, None)  # revoked
        self.unknown[digest] = now + UNKNOWN_KEY_CACHE_SECONDS
        if len(self.unknown) > self.unknown_limit:
            self.unknown.popitem(last=False)
        return None

    def forget(self, key: str) -> None:
        digest = api_keys.digest(key)
        self.known.pop(digest, None)
        self.unknown.pop(digest, None)

    def clear(self) -> None:
        self.known.clear()
        self.unknown.clear()
