"""A worker process and the batches it handles: what lasts between invocations (`Worker`: its view of
the store, its thread pools) and what lasts one invocation (`Batch`: its claims made ahead and its
completer)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass

from shared import settings
from shared.aws import clients, queue
from shared.store import job_items, running_slots
from shared.store.id_secret import id_secret
from shared.worker import fence
from shared.worker.breaker import AWS_ERRORS, StoreBreaker
from shared.worker.claim_ahead import ClaimsAhead
from shared.worker.completer import Completer, LateHandBack
from shared.worker.deadline import HiddenBatch
from shared.worker.delivery import Delivery
from shared.worker.running_share import BatchJob, RunningShare, job_of

# Of the init phase's 10 s: no call attempt starts that could end later (an attempt's worst case is
# its connect + read timeouts, 7 s), so a store that hangs costs the init phase at most this.
INIT_SECONDS = 9


@dataclass
class Batch:
    """One invocation's received messages, handled together (`shared.worker.receive.handle_all`) between
    `begin` and `finish`."""

    breaker: StoreBreaker
    claims: ClaimsAhead
    completer: Completer
    share: RunningShare  # its tenants' and concurrency keys' running slots, and which deliveries wait
    runners: Executor  # the threads that handle its deliveries, one each, at once

    def begin(self, seconds_left: float) -> None:
        """Hide the batch's messages; called while its claims made ahead are under way."""
        self.completer.hide(seconds_left)

    def finish(self) -> list[LateHandBack]:
        """Give back the claims no record used, wait for the outcome writes and send the outcome messages;
        returns the deliveries handed back because theirs failed."""
        self.claims.give_back_unused()
        late = self.completer.finish()
        self.share.give_back()
        return late


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
        (shared/worker/running_share.py), then the jobs within their caps are claimed together
        (shared/worker/claim_ahead.py)."""
        jobs = {} if self.breaker.cooling else _batch_jobs(deliveries)
        share = RunningShare(self._claimers, self.breaker, deliveries, jobs, self.at_cap)
        within_caps = [each for each in deliveries if share.starts_now(each)]
        job_messages = {message_id: job.message for message_id, job in jobs.items() if not job.carried}
        hidden = HiddenBatch(
            [
                (each.receipt_handle, each.body, waiting.delay_seconds if (waiting := share.waiting(each)) else None)
                for each in deliveries
                if each.receipt_handle
            ]
        )
        return Batch(
            self.breaker,
            ClaimsAhead(self._claimers, self.breaker, within_caps, job_messages),
            Completer(self.breaker, self._writers, hidden),
            share,
            self._runners,
        )

    def backstop_batch(self) -> Batch:
        """A batch of the backstop's messages (shared/worker/backstop.py): no job runs, so it takes no
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
