"""The API-key item as a pynamodb model: for minting and revoking keys (shared/tenants.py).

Kept apart so the API's request path, which only reads keys, never imports pynamodb.
"""

from __future__ import annotations

from pynamodb.attributes import UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.models import Model

from shared import settings


class ApiKey(Model):
    class Meta:
        table_name = settings.TABLE_NAME

    pk = UnicodeAttribute(hash_key=True)  # "apikey#<sha256 of the key>"
    tenant = UnicodeAttribute()
    label = UnicodeAttribute(default="")
    created_at = UTCDateTimeAttribute(null=True)
