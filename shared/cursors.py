"""Page cursors: an opaque, versioned position a listing continues from.

A cursor names a position only (a sort key, a schedule name), never a tenant: the partition a
listing reads is always the caller's, from its API key, so a cursor cannot lead into another
tenant's data. Anything not shaped like a cursor this API returned is refused with one message.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from shared.errors import InvalidRequest

NOT_A_CURSOR = "not a cursor this API returned; start again without it"


@dataclass(frozen=True)
class Codec:
    """One listing's cursors: its `version`, and the shape of the positions it continues from."""

    version: str
    position: re.Pattern[str]

    def encode(self, position: str) -> str:
        return base64.urlsafe_b64encode(f"{self.version}:{position}".encode()).decode().rstrip("=")

    def decode(self, cursor: str) -> str:
        """The position the cursor names; InvalidRequest (field `cursor`) unless it is one of this listing's,
        with a position of its shape."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise InvalidRequest("cursor", NOT_A_CURSOR) from None
        version, _, position = raw.partition(":")
        if version != self.version or not self.position.fullmatch(position):
            raise InvalidRequest("cursor", NOT_A_CURSOR)
        return position
