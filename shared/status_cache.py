"""Where job-status reads and writes go: the status cache in front of the store.

Issue 5 puts DAX (AWS) or its local stand-in here; until then job items go
straight to DynamoDB.
"""

from __future__ import annotations

from typing import Any

from shared.aws import client


def jobs_client() -> Any:
    return client("dynamodb")
