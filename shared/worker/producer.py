"""The producer: what turns the event source's batch into deliveries at work (river's producer.go). A
process's `Worker` makes each invocation's `Batch` (its tenants' running slots taken, its jobs within
their caps claimed ahead, its messages' cover), and `handle_all` hands every delivery to
shared/worker/receive.py at once, each on a thread of its own. From there one delivery passes
receive -> executor -> verdict -> completer (shared/worker/verdicts.py).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from shared import settings
from shared.aws import clients, queue
from shared.store.id_secret import id_secret
from shared.store.jobs import job_items
from shared.store.tenants import running_slots
from shared.worker import receive
from shared.worker.admit.claim_ahead import ClaimsAhead
from shared.worker.admit.running_share import RunningShare
from shared.worker.batch import Batch
from shared.worker.breaker import AWS_ERRORS, StoreBreaker
from shared.worker.complete.completer import Completer, Settled
from shared.worker.delivery import BatchJob, Delivery, job_of
from shared.worker.run import fence
from shared.worker.run.cover import HiddenBatch

# Of the init phase's 10 s: no call attempt starts that could end later (an attempt's worst case is
# its connect + read timeouts, 7 s), so a store that hangs costs the init phase at most this.
INIT_SECONDS = 9


class Worker:
    """What a worker process keeps from batch to batch: its view of the store, and the threads that handle
    a batch's deliveries (one per delivery of a full batch), claim its jobs ahead and write their outcomes."""

    def __init__(self) -> None:
        self.breaker = StoreBreaker()
        self.at_cap: set[str] = set()  # the tenants whose running slots this process last found full
        self._writers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="outcome-write")
        self._claimers = ThreadPoolExecutor(max_workers=settings.WORKER_BATCH_SIZE, thread_name_prefix="claim-ahead")
        self._runners = ThreadPoolExecutor(max_workers=settings.WORKER_BATCH_SIZE, thread_name_prefix="delivery")

    def prepare(self) -> None:
        """Make what every delivery uses before the first one arrives: the store's and the queue's clients
        (a client loads its service model: ~0.5-1 s on a busy 2-core machine, paid by the first batch's
        first record otherwise), the running slots' client, the jobs function's client if the stack has
        one, and the id secret.
        Called in the function's init phase; a store that fails now is read again at the first delivery."""
        with clients.deadline(INIT_SECONDS):
            for prepare_one in (
                job_items.prepare_clients,
                running_slots.prepare_client,
                queue.prepare_client,
                fence.prepare_client,
                id_secret,
            ):
                with contextlib.suppress(*AWS_ERRORS):
                    prepare_one()

    def batch(self, deliveries: Sequence[Delivery]) -> Batch:
        """A batch of `deliveries`: its tenants' running slots are taken as it is made
        (shared/worker/admit/running_share.py), then the jobs within their caps are claimed together
        (shared/worker/admit/claim_ahead.py)."""
        jobs = {} if self.breaker.cooling else _batch_jobs(deliveries)
        share = RunningShare(self._claimers, self.breaker, deliveries, jobs, self.at_cap)
        within_caps = [each for each in deliveries if share.starts_now(each)]
        job_messages = {message_id: job.message for message_id, job in jobs.items() if not job.carried}
        hidden = HiddenBatch(
            [
                (each.receipt_handle, each.body, waiting.delay_seconds if (waiting := share.waiting(each)) else None)
                for each in deliveries
                if each.receipt_handle
            ],
            deliveries[0].queue_url if deliveries else None,
        )
        return Batch(
            self.breaker,
            ClaimsAhead(self._claimers, self.breaker, within_caps, job_messages),
            Completer(self.breaker, self._writers, hidden),
            share,
            self._runners,
        )

    def backstop_batch(self) -> Batch:
        """A batch of the backstop's messages (shared/worker/complete/backstop.py): no job runs, so it takes no
        running slots, claims nothing and hides nothing; its completer records and buries."""
        return Batch(
            self.breaker,
            ClaimsAhead(self._claimers, self.breaker, [], {}),
            Completer(self.breaker, self._writers, HiddenBatch([])),
            RunningShare(self._claimers, self.breaker, [], {}),
            self._runners,
        )


def _batch_jobs(deliveries: Sequence[Delivery]) -> dict[str, BatchJob]:
    """The jobs the batch's deliveries may run, by SQS message id, read and verified once for its running
    slots and its claims made ahead: job messages whose ids verify, and the retries that failed attempts'
    outcome messages carry. The rest are left out (receive judges each at its turn), and all are if the
    id secret cannot be read (each delivery then finds out at its turn)."""
    try:
        secret = id_secret()
    except AWS_ERRORS:
        return {}
    return {delivery.message_id: job for delivery in deliveries if (job := job_of(delivery, secret)) is not None}


# How long a delivery's handling may run before the batch's next one starts beside it.
STAGGER_SECONDS = 0.05


@dataclass(frozen=True)
class Handled:
    settled: Settled  # what the delivery answers
    milliseconds: float  # how long handling it took


def handle_all(
    deliveries: Sequence[Delivery],
    batch: Batch,
    on_error: Callable[[Delivery, Exception], None],
    handle_with: Callable[[Delivery, Batch], Settled] | None = None,
) -> dict[str, Handled]:
    """Handle a batch's deliveries, each on a thread of its own, each starting as the one before ends or
    has run STAGGER_SECONDS (a lone delivery on the invocation's own thread): how each was handled, by
    message id. Run strictly one after another, a job
    would wait out every earlier job's time, up to its timeout: one tenant's slow jobs would hold their
    batch-mates' (docs/decisions/concurrent-batches.md).

    A delivery whose handling fails with an error of ours or of a dependency (not a job's failure,
    which is recorded) is handed back after `on_error` has seen it: its message comes back soon, later
    each time, and reaches the backstop after the queue's receive budget, instead of staying hidden for its
    job's whole visibility. `handle_with`: what handles one delivery (the backstop's has its own), else
    `receive.handle`."""
    handle_delivery = handle_with or receive.handle

    def handle_one(delivery: Delivery) -> Handled:
        began = time.perf_counter()
        try:
            settled = handle_delivery(delivery, batch)
        except Exception as error:
            on_error(delivery, error)
            settled = batch.completer.settle(delivery.hand_back(f"record failed: {error!r}"), delivery)
        return Handled(settled, round((time.perf_counter() - began) * 1000, 1))

    if len(deliveries) == 1:  # nothing to run beside it: no hand-off to a thread of its own
        only = deliveries[0]
        return {only.message_id: handle_one(only)}
    running: dict[str, Future[Handled]] = {}
    for delivery in deliveries:
        running[delivery.message_id] = started = batch.runners.submit(handle_one, delivery)
        # The next delivery starts when this one ends or has run STAGGER_SECONDS, whichever is first: quick
        # jobs then run one after another, not ten threads contending for the interpreter (on a loaded
        # worker that delayed a herd batch's last jobs by ~300 ms), and a slow one holds the rest that long.
        wait([started], timeout=STAGGER_SECONDS)
    return {message_id: future.result() for message_id, future in running.items()}
