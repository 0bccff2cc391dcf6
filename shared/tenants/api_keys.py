"""The API key format: a prefix, 32 random base62 characters and a 6-character CRC32 checksum.

`ck_` + 32 random characters (~190 bits) + base62(CRC32 of the first part), like GitHub's tokens:
a key's shape and checksum are checked in microseconds, before any cache or store lookup, so a
flood of made-up keys costs no I/O (a random string passes the checksum once in 2^32).

Keys minted before the checksum (`ck_` + 43 URL-safe characters, `secrets.token_urlsafe(32)`) are
still accepted: their shape is recognised, and unknown ones are remembered in the negative cache
(shared/tenants/tenants.py). They are listed as `legacy` once re-minted; nothing else differs.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
import zlib
from enum import StrEnum

PREFIX = "ck_"  # a tenant's key; operator keys are "co_" (shared/tenants/operators.py), same format otherwise
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_RANDOM_CHARS = 32
_CHECKSUM_CHARS = 6  # 62^6 > 2^32


class KeyShape(StrEnum):
    CURRENT = "current"  # checksum verified
    LEGACY = "legacy"  # minted before checksums; only a lookup can tell


@functools.cache
def _patterns(prefix: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    current = re.compile(rf"{re.escape(prefix)}[0-9A-Za-z]{{{_RANDOM_CHARS + _CHECKSUM_CHARS}}}")
    legacy = re.compile(rf"{re.escape(prefix)}[0-9A-Za-z_-]{{43}}")  # secrets.token_urlsafe(32)
    return current, legacy


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        digits.append(_ALPHABET[digit])
    return "".join(reversed(digits))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), _CHECKSUM_CHARS)


def mint(prefix: str = PREFIX) -> str:
    """A new key; only its hash is stored (`digest`)."""
    body = prefix + "".join(secrets.choice(_ALPHABET) for _ in range(_RANDOM_CHARS))
    return body + _checksum(body)


def shape(api_key: str, prefix: str = PREFIX) -> KeyShape | None:
    """The key's format if it could be a real key with this prefix, else None; no I/O."""
    current, legacy = _patterns(prefix)
    if current.fullmatch(api_key):
        body, checksum = api_key[:-_CHECKSUM_CHARS], api_key[-_CHECKSUM_CHARS:]
        return KeyShape.CURRENT if secrets.compare_digest(_checksum(body), checksum) else None
    if legacy.fullmatch(api_key):
        return KeyShape.LEGACY
    return None


def digest(api_key: str) -> str:
    """What the store keeps instead of the key: its SHA-256 (keys are random, so no salt is needed)."""
    return hashlib.sha256(api_key.encode()).hexdigest()


def key_id(api_key: str) -> str:
    """A key's public name in listings and `corral keys revoke`: the first 12 hex digits of its hash.
    It reveals nothing that helps guess the key."""
    return digest(api_key)[:12]
