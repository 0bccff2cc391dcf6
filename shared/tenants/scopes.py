"""What an API key may do: its scope, chosen when it is minted (docs/decisions/api-keys.md).

- `read`: see the tenant's jobs, batches, schedules and stats (a dashboard's, a monitor's key); never a
  signing secret, and it changes nothing.
- `enqueue`: add work (a job, jobs in bulk, a batch) and nothing else: it reads nothing back, and it
  cannot create a schedule, whose firings would outlive the key's revocation (a producer's key).
- `full`: everything; the default, and what a key minted before scopes existed is.

Each route needs one of these (functions/api/auth.py holds the table); `full` opens every route, and a
key of another scope opens the routes that need exactly its scope.
"""

from __future__ import annotations

from enum import StrEnum


class Scope(StrEnum):
    READ = "read"
    ENQUEUE = "enqueue"
    FULL = "full"


DEFAULT = Scope.FULL


def stored(value: str | None) -> str:
    """A key's scope as its item holds it: a key minted before scopes existed has none, and could do everything."""
    return Scope.FULL.value if value is None else value


def opens(key_scope: str, needed: Scope) -> bool:
    """Whether a key of `key_scope` opens a route that needs `needed`. A scope this code does not know
    (written by a newer version) opens nothing."""
    return key_scope == Scope.FULL or key_scope == needed


def opening(needed: Scope) -> tuple[Scope, ...]:
    """The scopes that open a route needing `needed`, narrowest first."""
    return (needed,) if needed is Scope.FULL else (needed, Scope.FULL)
