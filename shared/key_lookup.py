"""Looking up a key on every API request: a checksum check, then two caches, then one GetItem.

Real keys live in their own cache, which only keys found in the store enter, so its size is bounded
by the number of real keys and nothing a caller sends can evict one. Unknown (well-formed) keys sit
in a bounded LRU beside it, so a flood of made-up keys costs one read each at most per
UNKNOWN_KEY_CACHE_SECONDS and never grows memory without bound. Tenant keys (shared/tenants.py) and
operator keys (shared/operators.py) each have one.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import api_keys

UNKNOWN_KEYS_CACHED = 10_000
UNKNOWN_KEY_CACHE_SECONDS = 10  # a key created a moment ago starts working within this
# While the store fails, a known key whose cache time ran out keeps working this long past it, re-read
# every STALE_RETRY_SECONDS: a store blip must not fail the enqueues, which otherwise never touch the store.
STALE_KNOWN_SECONDS = 15 * 60
STALE_RETRY_SECONDS = 5


class KeyLookup:
    """Whom a key of one kind (`prefix`) belongs to; `owner_of(item)` reads it from the key's item."""

    def __init__(
        self,
        prefix: str,
        read_item: Callable[[str], dict[str, Any] | None],
        owner_of: Callable[[dict[str, Any]], str | None],
        known_seconds: Callable[[], float],
    ) -> None:
        self.prefix = prefix
        self.unknown_limit = UNKNOWN_KEYS_CACHED
        self._read_item = read_item
        self._owner_of = owner_of
        self._known_seconds = known_seconds
        self.known: dict[str, tuple[str, float]] = {}  # key digest -> (owner, cached until)
        self.unknown: OrderedDict[str, float] = OrderedDict()  # key digest -> cached until, LRU first

    def owner(self, key: str) -> str | None:
        """The key's owner, or None; malformed keys and bad checksums cost no I/O."""
        if api_keys.shape(key, self.prefix) is None:
            return None
        digest = api_keys.digest(key)
        now = time.monotonic()
        known = self.known.get(digest)
        if known and known[1] > now:
            return known[0]
        unknown_until = self.unknown.get(digest)
        if unknown_until is not None:
            if unknown_until > now:
                self.unknown.move_to_end(digest)
                return None
            del self.unknown[digest]
        try:
            item = self._read_item(digest)
        except (ClientError, BotoCoreError):
            if known is None or now - known[1] > STALE_KNOWN_SECONDS:
                raise
            # The store is failing: a key that was real a moment ago stays so for the blip, rather than
            # every request of its tenant failing (revocation waits for the store, at most STALE_KNOWN_SECONDS).
            self.known[digest] = (known[0], now + STALE_RETRY_SECONDS)
            return known[0]
        owner = self._owner_of(item) if item else None
        if owner is not None:
            self.known[digest] = (owner, now + self._known_seconds())
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
