"""A concurrency key's slots: at most `limit` of a tenant's jobs with one concurrency key run at once,
fleet-wide (shared/jobs/concurrency.py), so a customer calling a rate-limited partner API makes that many
calls at once.

As a batch begins, for its jobs within their tenant's cap (shared/worker/admit/running_share.py) that have a
concurrency key, it takes one slot of the (tenant, key) pool per job, one write per key (`KeySlots`). A job
without one waits in its batch, unclaimed, for a batch-mate of the same key to end (its slot passes on, no
write) or for a slot freed elsewhere (looked for every KEY_SLOT_POLL_SECONDS), at most
KEY_WAIT_IN_BATCH_SECONDS, and then waits unclaimed as a job over its cap does. A slot no job of the batch
waits for goes back to the store the moment its job ends, so another batch's jobs start at once.
The limit fails closed: while the store fails, a job with a key is handed back, never run uncounted
(docs/decisions/concurrency-keys.md).
"""

from __future__ import annotations

import threading
import time

from shared import settings
from shared.model.spec import Concurrency
from shared.store.tenants import running_slots
from shared.worker.breaker import AWS_ERRORS, StoreBreaker, is_outage, is_throttle


class KeySlots:
    """A batch's jobs of one tenant's concurrency key, and the slots of the key the batch holds for them.

    Each slot is a holder of its own in the key's pool (`<batch>.<n>`), so it goes back alone. A job
    that ends passes its slot to the first job of the batch still waiting for one (in enqueue order),
    without a write; with none waiting, the slot goes back to the store at once. A job waiting for a
    slot while none passes to it looks for one freed elsewhere every KEY_SLOT_POLL_SECONDS (one
    waiter at a time: a consistent read, and a write when there is room).
    """

    def __init__(
        self, tenant: str, concurrency: Concurrency, batch_holder: str, cover: float, breaker: StoreBreaker
    ) -> None:
        self.tenant = tenant
        self.key = concurrency.key
        self.limit = concurrency.limit
        self.uncounted = False  # the store failed taking its slots: its jobs wait (fail closed)
        self.enqueued_at: dict[str, float] = {}  # by message id: the order its waiters are served in
        self._cap = running_slots.Cap(slots=concurrency.limit, holders=concurrency.limit)
        self._batch_holder = batch_holder
        # A slot lasts this long from when it is taken: the longest cover of the key's jobs in the batch
        # (shared/worker/run/cover.py cover_seconds), so a job started on it within KEY_WAIT_IN_BATCH_SECONDS ends
        # inside it.
        self._cover = cover
        self._breaker = breaker
        self._changed = threading.Condition()
        self._given: dict[str, str] = {}  # message id -> the slot taken for it as the batch began
        self._free: list[str] = []  # slots held, that no job runs under now
        self._waiters: list[str] = []  # message ids waiting for a slot, in enqueue order
        self._next_slot = 0
        self._looking = False  # one waiter at a time looks for a slot in the store
        self._next_look = 0.0

    def _slot_ids(self, count: int) -> list[str]:
        first, self._next_slot = self._next_slot, self._next_slot + count
        return [f"{self._batch_holder}.{n}" for n in range(first, first + count)]

    def take_for(self, message_ids: list[str], now: float) -> None:
        """As the batch begins: a slot for each of its jobs, in enqueue order, as many as there is room for."""
        with self._changed:
            wanted = self._slot_ids(len(message_ids))
        got = running_slots.take_each(self.tenant, wanted, self._cap, now + self._cover, now, key=self.key)
        with self._changed:
            self._given = dict(zip(message_ids, got, strict=False))

    def has_slot(self, message_id: str) -> bool:
        return message_id in self._given

    def acquire(self, message_id: str, latest_start: float) -> str | None:
        """The slot this job runs under: taken as the batch began, passed on by a batch-mate, or freed
        elsewhere; None if none came by `latest_start` (the job is handed back)."""
        slot, spare = self._wait_for_slot(message_id, latest_start)
        self._give_back(spare)
        return slot

    def _wait_for_slot(self, message_id: str, latest_start: float) -> tuple[str | None, list[str]]:
        """(the slot, or None) and the slots nobody waits for any more, to give back (the last waiter left)."""
        with self._changed:
            if message_id in self._given:
                return self._given.pop(message_id), []
            self._waiters.append(message_id)
            self._waiters.sort(key=lambda waiter: self.enqueued_at.get(waiter, 0.0))
            while True:
                if self._free and self._waiters[0] == message_id:
                    self._waiters.pop(0)
                    self._changed.notify_all()
                    slot = self._free.pop()
                    spare, self._free = (self._free, []) if not self._waiters else ([], self._free)
                    return slot, spare
                now = time.time()
                if now >= latest_start:
                    self._waiters.remove(message_id)
                    self._changed.notify_all()
                    spare, self._free = (self._free, []) if not self._waiters else ([], self._free)
                    return None, spare
                if not self._looking and now >= self._next_look and len(self._waiters) > len(self._free):
                    self._look_elsewhere()
                    continue
                if self._looking or len(self._waiters) <= len(self._free):
                    until = latest_start  # woken when the look ends, or a slot reaches the waiters ahead
                else:
                    until = min(latest_start, self._next_look)
                self._changed.wait(max(until - now, 0.001))

    def _look_elsewhere(self) -> None:
        """Look in the store for slots freed by other batches, for the jobs waiting here (called holding
        the lock; the store is called without it, so that a job ending meanwhile can pass its slot on)."""
        self._looking = True
        wanted = self._slot_ids(len(self._waiters) - len(self._free))
        self._changed.release()
        got: list[str] = []
        try:
            if not self._breaker.cooling:
                now = time.time()
                got = running_slots.take_each(
                    self.tenant, wanted, self._cap, now + self._cover, now, key=self.key, look_first=True
                )
        except AWS_ERRORS as error:
            pool_failed(self._breaker, error)
        finally:
            self._changed.acquire()
            self._looking = False
            self._next_look = time.time() + settings.KEY_SLOT_POLL_SECONDS
            self._free += got
            self._changed.notify_all()

    def release(self, slot: str) -> None:
        """A job under `slot` has run: the slot passes to a job of the batch waiting for one, else back to the store."""
        with self._changed:
            if self._waiters:
                self._free.append(slot)
                self._changed.notify_all()
                return
        self._give_back([slot])

    def give_back_unused(self) -> None:
        """The batch ends: slots no job used (a waiter handed back, a job that never started) go back."""
        with self._changed:
            unused = self._free + list(self._given.values())
            self._free, self._given = [], {}
        self._give_back(unused)

    def _give_back(self, slots: list[str]) -> None:
        """Best effort: a slot not given back is freed when its hold ends (its `until`)."""
        for slot in slots:
            try:
                running_slots.give_back(self.tenant, slot, 1, key=self.key)
            except AWS_ERRORS as error:
                pool_failed(self._breaker, error)


def pool_failed(breaker: StoreBreaker, error: Exception) -> None:
    """A call on one pool's item failed: the process's breaker hears of a store that failed, not of a
    throttle of that one item (its tenant's load, not everyone's)."""
    if is_outage(error) and not is_throttle(error):
        breaker.failed()
