"""A batch: what lasts one invocation of the worker, its received messages handled together (by
shared/worker/producer.py `handle_all`) between `begin` and `finish`: its tenants' and concurrency keys'
running slots, its claims made ahead, and its completer."""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass

from shared.worker.admit.claim_ahead import ClaimsAhead
from shared.worker.admit.running_share import RunningShare
from shared.worker.breaker import StoreBreaker
from shared.worker.complete.carried import LateHandBack
from shared.worker.complete.completer import Completer


@dataclass
class Batch:
    """One invocation's received messages, handled together (`producer.handle_all`) between `begin` and
    `finish`."""

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
