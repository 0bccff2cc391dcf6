"""`StackParts`: what the stack's function-running constructs are built from, made once by `infra/stack.py`."""

from __future__ import annotations

from dataclasses import dataclass

from infra.capacity import Capacity
from infra.functions import FunctionFactory
from infra.queue import JobQueue
from infra.store import JobStore
from shared.profiles import Profile
from shared.settings import ResourceNames


@dataclass(frozen=True)
class StackParts:
    """The stage's names and profile, the factory of its functions, the table, the queues, and the
    stage's shares of the account's capacity (infra/capacity.py)."""

    names: ResourceNames
    profile: Profile
    functions: FunctionFactory
    store: JobStore
    queue: JobQueue
    capacity: Capacity
