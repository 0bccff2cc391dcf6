"""Page cursors: an opaque, versioned position a listing continues from.

A cursor names a position only (a sort key, a schedule name), never a tenant: the partition a
listing reads is always the caller's, from its API key, so a cursor cannot lead into another
tenant's data. Anything not shaped like a cursor this API returned is refused with one message.
"""

from __future__ import annotations

import base64
import binascii
import re

NOT_A_CURSOR = "not a cursor this API returned; start again without it"


def encode(version: str, position: str) -> str:
    return base64.urlsafe_b64encode(f"{version}:{position}".encode()).decode().rstrip("=")


def decode(cursor: str, version: str, position: re.Pattern[str]) -> str | None:
    """The position a cursor names, or None when it is not one of `version` with a `position`-shaped value."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    found_version, _, value = raw.partition(":")
    return value if found_version == version and position.fullmatch(value) else None
