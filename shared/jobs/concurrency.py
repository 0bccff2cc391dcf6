"""Concurrency keys: which key (and limit) a job runs under, if any.

A job's own `concurrency` ({"key", "limit"} in its body, carried by its message) wins; otherwise its
type's `@job_type(concurrency_key="<payload field>", concurrency_limit=...)`: the value of that field
of its payload. A field, not a function: the worker reads it from the type's declaration, as it holds
no customer code (the jobs function does; docs/decisions/customer-code-fence.md). At most
`limit` of a tenant's jobs with one key run at once: the worker holds a running slot of the
(tenant, key) pool for each (shared/worker/admit/key_slots.py, docs/decisions/concurrency-keys.md).
"""

from __future__ import annotations

from shared import settings
from shared.errors import CorralError
from shared.jobs import job_types
from shared.model.message import JobMessage
from shared.model.spec import Concurrency


class KeyUnreadable(CorralError, ValueError):
    """A job's payload has no usable value in its type's concurrency key field."""


def concurrency_of(message: JobMessage) -> Concurrency | None:
    """The key and limit the job runs under; None if it has none. KeyUnreadable if its payload has no
    usable value in its type's key field (the job cannot run: no retry changes its payload)."""
    if message.concurrency is not None:
        return message.concurrency
    found = job_types.lookup(message.type)
    if found is None or found.concurrency_key is None or found.concurrency_limit is None:
        return None
    field = found.concurrency_key
    value = message.payload.get(field) if isinstance(message.payload, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    most = settings.MAX_CONCURRENCY_KEY_CHARS
    if not isinstance(value, str) or not 0 < len(value) <= most:
        raise KeyUnreadable(
            f"its type's concurrency key is the payload field {field!r}, which must be a string of 1 to {most} "
            f"characters or a whole number; the payload has {value!r}"
        )
    return Concurrency(key=value, limit=found.concurrency_limit)
