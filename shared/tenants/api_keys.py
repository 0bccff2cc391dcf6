"""The API key format: a prefix, 32 random base62 characters and a 6-character CRC32 checksum.

`ck_` + 32 random characters (~190 bits) + base62(CRC32 of the first part), like GitHub's tokens:
a key's shape and checksum are checked in microseconds, before any cache or store lookup, so a
flood of made-up keys costs no I/O (a random string passes the checksum once in 2^32).

A key without the checksum opens nothing: the format of the earliest keys (`ck_` + 43 URL-safe
characters) is refused like any other malformed key, so no string a caller makes up costs a store
read (docs/decisions/api-keys.md, "No key without a checksum", has the migration).
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
import zlib

PREFIX = "ck_"  # a tenant's key; operator keys are "co_" (shared/tenants/operators.py), same format otherwise
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_RANDOM_CHARS = 32
_CHECKSUM_CHARS = 6  # 62^6 > 2^32


@functools.cache
def _pattern(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"{re.escape(prefix)}[0-9A-Za-z]{{{_RANDOM_CHARS + _CHECKSUM_CHARS}}}")


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


def is_well_formed(api_key: str, prefix: str = PREFIX) -> bool:
    """Whether the key has this prefix, the format and a checksum that verifies: whether it could be a
    real key at all. No I/O."""
    if not _pattern(prefix).fullmatch(api_key):
        return False
    body, checksum = api_key[:-_CHECKSUM_CHARS], api_key[-_CHECKSUM_CHARS:]
    return secrets.compare_digest(_checksum(body), checksum)


def digest(api_key: str) -> str:
    """What the store keeps instead of the key: its SHA-256 (keys are random, so no salt is needed)."""
    return hashlib.sha256(api_key.encode()).hexdigest()


def key_id(api_key: str) -> str:
    """A key's public name in listings and `corral keys revoke`: the first 12 hex digits of its hash.
    It reveals nothing that helps guess the key."""
    return digest(api_key)[:12]
