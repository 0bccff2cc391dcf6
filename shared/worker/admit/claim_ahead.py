"""A batch's claims, made together as it begins: the batch's first claim goes alone, as a probe of the
store, and the others follow it together, so a store blip costs the batch one failed call, not ten."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from shared.jobs import job_types
from shared.model.message import JobMessage
from shared.store.jobs import job_claims
from shared.worker.breaker import StoreBreaker, is_outage
from shared.worker.delivery import Delivery
from shared.worker.run import cover


@dataclass(frozen=True)
class ClaimAhead:
    """A job's claim, made when its batch began."""

    job_id: str
    claimed_at: float
    lease: int
    claim: Future[job_claims.ClaimResult]


class ClaimsAhead:
    """The claims made for a batch's deliveries as it begins, each taken (used once) by its job's thread.

    Only what `receive` would claim: a readable job message of a known type that fits the
    invocation's time, one per job, while the store answers. Each lease, like its message's
    visibility (cover.HiddenBatch), covers the job's own timeout plus the margin (the batch's jobs
    start together): if this worker dies, each job can be claimed again that soon. A claim that no
    job used (its delivery was handed back) is given back at the batch's end (`give_back_unused`).
    The claim records the claim's time; the outcome write records when the job's code really started.
    """

    def __init__(
        self, claimers: Executor, breaker: StoreBreaker, deliveries: Sequence[Delivery], jobs: Mapping[str, JobMessage]
    ) -> None:
        """`jobs`: the batch's job messages whose ids verify, by SQS message id (shared/worker/producer.py)."""
        self._claims: dict[str, ClaimAhead] = {}  # by SQS message id
        if len(deliveries) < 2 or breaker.cooling:
            return
        claimed: set[str] = set()
        now = time.time()
        probe: Future[job_claims.ClaimResult] | None = None
        for delivery in deliveries:
            message = jobs.get(delivery.message_id)
            if message is None or job_types.lookup(message.type) is None:
                continue
            if delivery.seconds_left < cover.seconds_needed_to_start(message):
                continue  # handed back at its turn
            if message.debounce is not None or message.unique is not None:
                continue  # its debounce group or unique key decides first, at its turn (debounced.py, unique_runs.py)
            if message.id in claimed:
                continue  # the same job twice: the second delivery finds it claimed at its turn
            claimed.add(message.id)
            span = cover.cover_span(cover.timeout_of(message), delivery.seconds_left)
            lease = cover.lease_seconds(span)
            claim = claimers.submit(_claim_after, probe, message, delivery.message_id, now, lease)
            self._claims[delivery.message_id] = ClaimAhead(message.id, now, lease, claim)
            probe = probe or claim

    def take(self, message: JobMessage, delivery: Delivery) -> ClaimAhead | None:
        """The claim made for this delivery of this job, if any (taken: used once)."""
        ahead = self._claims.get(delivery.message_id)
        if ahead is None or ahead.job_id != message.id:
            return None
        del self._claims[delivery.message_id]
        return ahead

    def give_back_unused(self) -> None:
        """Claims that no record used (its record was handed back before its job could start, e.g. too
        little of the invocation was left by its turn): each job is queued again, so its next delivery
        claims it at once instead of waiting out the lease. Best effort: the leases end anyway, and
        nothing here may fail the batch, whose records are answered already."""
        for ahead in self._claims.values():
            with contextlib.suppress(Exception):
                claim = ahead.claim.result()
                if isinstance(claim, job_claims.Claimed):
                    job_claims.release(ahead.job_id, claim.token)


def _claim_after(
    probe: Future[job_claims.ClaimResult] | None, message: JobMessage, message_id: str, now: float, lease: int
) -> job_claims.ClaimResult:
    """Claim once the batch's first claim has answered (`probe`), unless it found the store failing:
    then this claim fails as that one did, without a call. A store blip costs a batch one failed
    call, as claims made in turn did, not ten, and its jobs run unclaimed (or hand back) at once."""
    if probe is not None:
        error = probe.exception()
        if error is not None and is_outage(error):
            raise error
    return job_claims.claim(message, message_id, now, lease, single_attempt=True)
