"""Concurrency keys: which key (and limit) a job runs under, if any.

A job's own `concurrency` ({"key", "limit"} in its body, carried by its message) wins; otherwise its
type's `@job_type(concurrency_key=..., concurrency_limit=...)`, a function of the payload that runs
on the worker, which loads the type's code (the API never imports a customer's module). At most
`limit` of a tenant's jobs with one key run at once: the worker holds a running slot of the
(tenant, key) pool for each (shared/worker/running_share.py, docs/decisions/concurrency-keys.md).
"""

from __future__ import annotations

from shared import settings
from shared.errors import CorralError
from shared.jobs import job_types
from shared.model import Concurrency, JobMessage


class KeyUnreadable(CorralError, ValueError):
    """A type's concurrency_key failed on a payload, or gave something that is not a key."""


def concurrency_of(message: JobMessage) -> Concurrency | None:
    """The key and limit the job runs under; None if it has none. KeyUnreadable if its type's key
    function cannot give one for this payload (the job cannot run: no retry changes its payload)."""
    if message.concurrency is not None:
        return message.concurrency
    found = job_types.lookup(message.type)
    if found is None or found.concurrency_key is None or found.concurrency_limit is None:
        return None
    try:
        key = found.concurrency_key(message.payload)
    except Exception as error:  # the type's own code, on a payload it did not expect
        raise KeyUnreadable(f"its type's concurrency_key failed: {type(error).__name__}: {error}") from error
    most = settings.MAX_CONCURRENCY_KEY_CHARS
    if not isinstance(key, str) or not 0 < len(key) <= most:
        raise KeyUnreadable(f"its type's concurrency_key gave {key!r}, not a string of 1 to {most} characters")
    return Concurrency(key=key, limit=found.concurrency_limit)
