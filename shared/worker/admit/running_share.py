"""A tenant's share of the fleet, and its concurrency keys' limits: at most `max_running` of a tenant's
jobs run at once, fleet-wide, so one tenant's slow jobs (a flood of them, or a tarpit of HTTP jobs
that never answer) leave the rest of the fleet to everyone else; and at most `limit` of its jobs with
one concurrency key, so a customer calling a rate-limited partner API makes that many calls at once.

As a batch begins, it takes running slots (shared/store/tenants/running_slots.py) for each tenant's jobs in
it, one write per tenant. A batch holds its worker environment until its slowest job ends, so the
cap also bounds the batches holding a tenant's jobs at once: max_running / 10 (a full batch's), at
least one; a tenant's share of the fleet is then a share of its environments, however its jobs are
spread over batches. A job beyond its tenant's cap waits unclaimed (shared/worker/admit/waiting.py): it uses
no attempt and no receive budget, and comes back later each time. The batch gives its slots back as it
ends; a worker that dies holds them until its jobs' timeouts have passed. A cap of 0 is no cap, and
costs no write. If taking a tenant's slots fails (throttled or failing), its jobs wait when this process
last saw the tenant at its cap; otherwise up to its cap of them run uncounted under a store blip's rules
rather than wait. A throttle never trips the process's store breaker (docs/decisions/running-cap.md).

Then, for its jobs within their tenant's cap that have a concurrency key, it takes their keys' slots
(shared/worker/admit/key_slots.py), and `admit` lets each job start under its key's slot, waiting in the batch
for one if it must.
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from shared import settings
from shared.jobs.concurrency import KeyUnreadable, concurrency_of
from shared.model.message import JobMessage
from shared.model.spec import Concurrency
from shared.store.tenants import running_slots
from shared.tenants import quotas
from shared.worker.admit import waiting
from shared.worker.admit.key_slots import KeySlots, pool_failed
from shared.worker.admit.throttle_turns import ThrottleTurns
from shared.worker.breaker import AWS_ERRORS, StoreBreaker, is_outage, is_throttle
from shared.worker.delivery import BatchJob, Delivery
from shared.worker.run import cover
from shared.worker.verdicts import Unreadable, Wait


@dataclass(frozen=True)
class Waiting:
    """A delivery over its tenant's cap (or whose tenant's slots could not be counted): it waits."""

    reason: str
    delay_seconds: int  # how long it waits: set as the batch begins, with the batch's other visibilities


@dataclass(frozen=True)
class Admission:
    """Whether a job starts now (`refused` None: it holds its key's slot, if it has a key), and what
    gives the slot back once its job has run."""

    refused: Wait | Unreadable | None = None
    release: Callable[[], None] = lambda: None


class RunningShare:
    """The running slots a batch holds: which of its deliveries are over their tenant's cap, and the
    concurrency keys' slots its jobs wait for or run under."""

    def __init__(
        self,
        takers: Executor,
        breaker: StoreBreaker,
        deliveries: Sequence[Delivery],
        jobs: Mapping[str, BatchJob],
        at_cap: set[str] | None = None,
    ) -> None:
        """`jobs`: the jobs the batch's deliveries may run, by SQS message id (`delivery.job_of`, read once
        by shared/worker/producer.py). `at_cap`: the tenants this process last found at their cap, kept from
        batch to batch (updated here)."""
        self._holder = uuid.uuid4().hex[:16]
        self._breaker = breaker
        self._at_cap = set() if at_cap is None else at_cap
        self._began = time.time()
        self._held: dict[str, int] = {}  # tenant -> slots this batch holds
        self._waiting: dict[str, Waiting] = {}  # by message id: the deliveries over their tenant's cap
        self._keys: dict[str, KeySlots] = {}  # by message id: its key's slots in this batch
        self._unreadable_keys: dict[str, str] = {}  # by message id: why its type's key cannot be read
        self._throttles = ThrottleTurns(takers, breaker, [])
        if breaker.cooling:
            return  # uncounted; and a job with a concurrency key or a throttle waits (finding no slot or turn)
        by_tenant: dict[str, list[tuple[Delivery, int]]] = {}
        counted: set[str] = set()
        for delivery in deliveries:
            job = jobs.get(delivery.message_id)
            # Two copies of one message (SQS's at-least-once) are one job: counted twice, the copy over the cap
            # made both wait (the verdicts are by message id), and copies handed back alike waited forever.
            if job is not None and not job.carried and delivery.message_id not in counted:
                counted.add(delivery.message_id)
                by_tenant.setdefault(job.message.tenant, []).append((delivery, cover.timeout_of(job.message)))
        taking = {
            tenant: takers.submit(self._take, tenant, its_jobs, self._began)
            for tenant, its_jobs in by_tenant.items()  # each tenant's limits read and slots taken beside the others'
        }
        for tenant, taken in taking.items():
            try:
                cap, count = taken.result()
            except AWS_ERRORS as error:
                closed = self._uncounted(tenant, error)
                # Uncounted, at most its cap of the tenant's jobs in this batch run; the rest wait.
                cap = quotas.limits_for(tenant).max_running
                running_uncounted = 0 if closed is not None else len(by_tenant[tenant]) if cap <= 0 else cap
                for delivery, _ in by_tenant[tenant][running_uncounted:]:
                    reason = closed or f"its tenant's running slots could not be counted: at most {cap} run uncounted"
                    self._waiting[delivery.message_id] = Waiting(reason, waiting.delay_seconds(delivery))
                continue
            if count and cap > 0:
                self._held[tenant] = count
            if cap > 0 and count < len(by_tenant[tenant]):
                self._at_cap.add(tenant)
            else:
                self._at_cap.discard(tenant)
            for delivery, _ in by_tenant[tenant][count:]:
                delay = waiting.delay_seconds(delivery, settings.OVER_CAP_HAND_BACK_UNIT_SECONDS)
                batches = _cap_of(cap).holders
                reason = f"its tenant's running slots are full: {cap} jobs, or {batches} batches, at once (max_running)"
                self._waiting[delivery.message_id] = Waiting(reason, delay)
        within = [(delivery, job) for delivery in deliveries if (job := jobs.get(delivery.message_id)) is not None]
        starting = [(d, job.message) for d, job in within if d.message_id not in self._waiting]
        self._throttles = ThrottleTurns(takers, breaker, starting)
        self._take_keys(takers, starting)

    def _uncounted(self, tenant: str, error: Exception) -> str | None:
        """Taking `tenant`'s slots failed with `error`: why all its jobs wait, or None if up to its cap of
        them run uncounted.

        They wait when this process's last take found the tenant at its cap: a tenant known to be full
        gains nothing from a failure. Otherwise a throttle and an outage are treated alike, since a store
        blip answers with both: up to the cap of the batch's jobs run uncounted, under the blip's rules
        (docs/decisions/store-blips.md). A tenant can throttle its own item only with many short
        batches (every batch writes it twice), whose environments find it at its cap; and a throttle
        never trips the breaker, which serves every tenant's jobs (docs/decisions/running-cap.md)."""
        if is_outage(error) and not is_throttle(error):
            self._breaker.failed()
        if tenant in self._at_cap:
            why = "throttled" if is_throttle(error) else "unavailable"
            return f"store {why} counting its tenant's running slots, last found at its cap: it waits"
        return None

    def _take(self, tenant: str, jobs: list[tuple[Delivery, int]], now: float) -> tuple[int, int]:
        """(the tenant's cap, how many of its `jobs` got a slot); all of them where it has no cap."""
        most = quotas.limits_for(tenant).max_running
        if most <= 0:
            return most, len(jobs)
        cap = _cap_of(most)
        until = now + max(cover.cover_seconds(timeout, delivery.seconds_left) for delivery, timeout in jobs)
        return most, running_slots.take(tenant, self._holder, len(jobs), cap, until, now)

    def _take_keys(self, takers: Executor, jobs: list[tuple[Delivery, JobMessage]]) -> None:
        """Group the batch's jobs by (tenant, concurrency key), and take each group's slots, one write per key."""
        groups: dict[tuple[str, Concurrency], list[tuple[Delivery, JobMessage]]] = {}
        for delivery, message in jobs:
            try:
                concurrency = concurrency_of(message)
            except KeyUnreadable as unreadable:
                self._unreadable_keys[delivery.message_id] = str(unreadable)
                continue
            if concurrency is not None:
                groups.setdefault((message.tenant, concurrency), []).append((delivery, message))
        taking: dict[KeySlots, Future[None]] = {}
        for (tenant, concurrency), members in groups.items():
            members.sort(key=lambda member: member[1].enqueued_at)  # in enqueue order, as far as SQS allows
            longest = max(
                cover.cover_seconds(cover.timeout_of(message), delivery.seconds_left) for delivery, message in members
            )
            slots = KeySlots(tenant, concurrency, self._holder, longest, self._breaker)
            taking[slots] = takers.submit(slots.take_for, [member[0].message_id for member in members], self._began)
            for delivery, message in members:
                self._keys[delivery.message_id] = slots
                slots.enqueued_at[delivery.message_id] = message.enqueued_at
        for slots, taken in taking.items():
            try:
                taken.result()
            except AWS_ERRORS as error:
                pool_failed(self._breaker, error)
                slots.uncounted = True  # fails closed: its jobs wait at their turn

    def waiting(self, delivery: Delivery) -> Waiting | None:
        """Whether the delivery is over its tenant's cap (or its tenant's slots could not be counted): it
        waits `delay_seconds`."""
        return self._waiting.get(delivery.message_id)

    def starts_now(self, delivery: Delivery) -> bool:
        """Whether the delivery's job may start as the batch begins (so it may be claimed ahead): within
        its tenant's cap, its throttle's turn come, and holding its key's slot if it has a key."""
        if delivery.message_id in self._waiting or delivery.message_id in self._unreadable_keys:
            return False
        if not self._throttles.starts_now(delivery):
            return False
        slots = self._keys.get(delivery.message_id)
        return slots is None or slots.has_slot(delivery.message_id)

    def admit(self, message: JobMessage, delivery: Delivery) -> Admission:
        """Whether the job may start now, after waiting in the batch for its key's slot if it has a key:
        its Admission, whose `release` passes the slot on once the job has run. A throttled job waits for its
        turn first (shared/worker/admit/throttle_turns.py)."""
        throttled = self._throttles.admit(message, delivery)
        if throttled is not None:
            return Admission(refused=throttled)
        if delivery.message_id in self._unreadable_keys:
            return Admission(refused=_unreadable_key(message, self._unreadable_keys[delivery.message_id]))
        slots = self._keys.get(delivery.message_id)
        if slots is None:
            try:
                concurrency = concurrency_of(message)
            except KeyUnreadable as unreadable:
                return Admission(refused=_unreadable_key(message, str(unreadable)))
            if concurrency is None:
                return Admission()
            # A key the batch could not count (the store failed as it began): the limit fails closed.
            return Admission(refused=_key_wait(message, delivery, "store unavailable counting its concurrency key"))
        if slots.uncounted:
            return Admission(refused=_key_wait(message, delivery, "store unavailable counting its concurrency key"))
        latest_start = self._began + min(
            settings.KEY_WAIT_IN_BATCH_SECONDS, delivery.seconds_left - cover.seconds_needed_to_start(message)
        )
        slot = slots.acquire(delivery.message_id, latest_start)
        if slot is None:
            reason = f"{slots.limit} jobs of its concurrency key run at once already"
            return Admission(refused=_key_wait(message, delivery, reason))
        if not self._throttles.on_time(delivery):
            slots.release(slot)
            return Admission(refused=self._throttles.missed(message, delivery))
        return Admission(release=lambda: slots.release(slot))

    def give_back(self) -> None:
        """The batch ends: its slots are free. Best effort: a hold not given back ends at its `until`."""
        for tenant, slots in self._held.items():
            with contextlib.suppress(*AWS_ERRORS):
                running_slots.give_back(tenant, self._holder, slots)
        self._held.clear()
        for key_slots in set(self._keys.values()):
            key_slots.give_back_unused()
        self._keys.clear()


def _cap_of(max_running: int) -> running_slots.Cap:
    """A tenant's running slots: `max_running` jobs, held by at most as many batches as full ones would need."""
    return running_slots.Cap(slots=max_running, holders=math.ceil(max_running / settings.WORKER_BATCH_SIZE))


def _key_wait(message: JobMessage, delivery: Delivery, reason: str) -> Wait:
    """A job over its key's limit comes back soon, later each time (it may wait behind a long backlog)."""
    return waiting.wait(
        message, delivery, waiting.WaitReason.CONCURRENCY_KEY, reason, unit=settings.KEY_WAIT_HAND_BACK_UNIT_SECONDS
    )


def _unreadable_key(message: JobMessage, why: str) -> Unreadable:
    """A job whose type's key function fails on its payload cannot run: no retry changes the payload."""
    return Unreadable(f"its concurrency key cannot be read: {why}", message.to_dict())
