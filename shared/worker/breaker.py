"""This process's view of the store: after a failed call, the worker leaves the store alone for a moment.

Every store call on the worker's path has a fallback (run unclaimed, carry the outcome in a message,
hand the delivery back), so each makes one attempt, never botocore's backoff: a batch of 10 that
retried every record would hold its jobs for seconds and could outlast the invocation's timeout.
A blip costs each process one failed call per STORE_COOLDOWN_SECONDS, and the first call after it
finds out whether the store is back.
"""

from __future__ import annotations

import time

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from shared.aws.clients import aws_error_code

# A store (or queue) call that failed after botocore's own retries (throttling, 5xx, timeouts): a blip.
AWS_ERRORS = (ClientError, BotoCoreError)

STORE_COOLDOWN_SECONDS = 0.5


def is_outage(error: BaseException) -> bool:
    """A failed AWS call worth retrying later. A request AWS (or botocore) rejects as invalid
    fails the same way every time: retrying it is not waiting out a blip."""
    if isinstance(error, ParamValidationError):
        return False
    return isinstance(error, AWS_ERRORS) and aws_error_code(error) != "ValidationException"


# DynamoDB's answers to more requests than an item's partition (or the table, or the account) takes now.
THROTTLE_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})


def is_throttle(error: BaseException) -> bool:
    """A request the store refused as one too many, not a store that failed. On one item of its own (a
    tenant's running slots) it tells of that item's load, which a tenant can cause: it is no reason to
    leave the store alone for every tenant's jobs."""
    return isinstance(error, AWS_ERRORS) and aws_error_code(error) in THROTTLE_CODES


class StoreBreaker:
    """Whether the store failed moments ago. One per process, shared by its batches."""

    def __init__(self) -> None:
        self.down_until = 0.0  # time.monotonic() until which the store is left alone

    def failed(self) -> None:
        """A store call just failed with an outage."""
        self.down_until = time.monotonic() + STORE_COOLDOWN_SECONDS

    @property
    def cooling(self) -> bool:
        """The store failed moments ago: call it again only after the cooldown."""
        return time.monotonic() < self.down_until
