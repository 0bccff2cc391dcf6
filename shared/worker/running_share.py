"""A tenant's share of the fleet: at most `max_running` of its jobs run at once, fleet-wide, so one
tenant's slow jobs (a flood of them, or a tarpit of HTTP jobs that never answer) leave the rest of
the fleet to everyone else.

As a batch begins, it takes running slots (shared/store/running_slots.py) for each tenant's jobs in
it, one write per tenant. A batch holds its worker environment until its slowest job ends, so the
cap also bounds the batches holding a tenant's jobs at once: max_running / 10 (a full batch's), at
least one; a tenant's share of the fleet is then a share of its environments, however its jobs are
spread over batches. A job beyond its tenant's cap is handed back unclaimed: it waits without
using an attempt, and comes back later each time. The batch gives its slots back as it ends; a
worker that dies holds them until its jobs' timeouts have passed. A cap of 0 is no cap, and costs no
write. If the store fails, the batch runs its jobs uncounted rather than wait
(docs/decisions/running-cap.md).
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

from shared import settings
from shared.aws import queue
from shared.model import JobMessage
from shared.store import running_slots
from shared.tenants import quotas
from shared.worker import deadline
from shared.worker.breaker import AWS_ERRORS, StoreBreaker, is_outage
from shared.worker.delivery import Delivery


@dataclass(frozen=True)
class Waiting:
    cap: int  # its tenant's max_running
    delay_seconds: int  # how long it waits: set as the batch begins, with the batch's other visibilities


class RunningShare:
    """The running slots a batch holds, and which of its deliveries are over their tenant's cap."""

    def __init__(
        self, takers: Executor, breaker: StoreBreaker, deliveries: Sequence[Delivery], jobs: Mapping[str, JobMessage]
    ) -> None:
        """`jobs`: the batch's job messages whose ids verify, by SQS message id (shared/worker/batch.py)."""
        self._holder = uuid.uuid4().hex[:16]
        self._held: dict[str, int] = {}  # tenant -> slots this batch holds
        self._waiting: dict[str, Waiting] = {}  # by message id: the deliveries over their tenant's cap
        if breaker.cooling:
            return
        by_tenant: dict[str, list[tuple[Delivery, int]]] = {}
        for delivery in deliveries:
            if (message := jobs.get(delivery.message_id)) is not None:
                by_tenant.setdefault(message.tenant, []).append((delivery, deadline.timeout_of(message)))
        now = time.time()
        taking = {
            tenant: takers.submit(self._take, tenant, its_jobs, now)
            for tenant, its_jobs in by_tenant.items()  # each tenant's limits read and slots taken beside the others'
        }
        for tenant, taken in taking.items():
            try:
                cap, count = taken.result()
            except AWS_ERRORS as error:
                if is_outage(error):
                    breaker.failed()
                continue  # uncounted: the batch runs what it received
            if count and cap > 0:
                self._held[tenant] = count
            for delivery, _ in by_tenant[tenant][count:]:
                delay = queue.hand_back_seconds(delivery.receive_count, unit=settings.OVER_CAP_HAND_BACK_UNIT_SECONDS)
                self._waiting[delivery.message_id] = Waiting(cap, delay)

    def _take(self, tenant: str, jobs: list[tuple[Delivery, int]], now: float) -> tuple[int, int]:
        """(the tenant's cap, how many of its `jobs` got a slot); all of them where it has no cap."""
        most = quotas.limits_for(tenant).max_running
        if most <= 0:
            return most, len(jobs)
        cap = running_slots.Cap(slots=most, holders=math.ceil(most / settings.WORKER_BATCH_SIZE))
        until = now + max(deadline.cover_seconds(timeout, delivery.seconds_left) for delivery, timeout in jobs)
        return most, running_slots.take(tenant, self._holder, len(jobs), cap, until, now)

    def waiting(self, delivery: Delivery) -> Waiting | None:
        """Whether the delivery is over its tenant's cap: it waits, handed back for `delay_seconds`."""
        return self._waiting.get(delivery.message_id)

    def give_back(self) -> None:
        """The batch ends: its slots are free. Best effort: a hold not given back ends at its `until`."""
        for tenant, slots in self._held.items():
            with contextlib.suppress(*AWS_ERRORS):
                running_slots.give_back(tenant, self._holder, slots)
        self._held.clear()
