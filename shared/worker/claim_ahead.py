"""A batch's claims, made together as it begins: the k-th job of a batch then waits for two claims'
round trips (the batch's first claim, then its own beside the others'), not k of them, behind the
k - 1 jobs before it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from shared.jobs import job_types
from shared.model import JobMessage, OutcomeMessage, UnreadableMessage, read_message
from shared.store import job_store
from shared.store.id_secret import id_secret
from shared.worker import deadline
from shared.worker.breaker import AWS_ERRORS, StoreBreaker, is_outage
from shared.worker.delivery import Delivery


@dataclass(frozen=True)
class ClaimAhead:
    """A job's claim, made when its batch began; its lease is extended at the job's turn if need be."""

    job_id: str
    claimed_at: float
    lease: int
    claim: Future[job_store.ClaimResult]


class ClaimsAhead:
    """The claims made for a batch's deliveries as it begins, each taken (used once) at its job's turn.

    Only what `receive` would claim at its turn: a readable job message of a known type that fits
    the invocation's time, one per job, while the store answers. Each lease, like its message's
    visibility (deadline.HiddenBatch), covers the batch's first job's timeout (or its own, if longer)
    plus the margin: if this worker dies, the batch's jobs can be claimed again that soon, not after
    the batch's timeouts added up. A job whose turn comes later than its lease allows for extends it
    then (`lease_for_its_turn`). A job that no longer fits when its turn comes is handed back, and
    its claim given back at the batch's end (`give_back_unused`). The claim records the claim's
    time; the outcome write records when the job's code really started.
    """

    def __init__(self, claimers: Executor, breaker: StoreBreaker, deliveries: Sequence[Delivery]) -> None:
        self._claims: dict[str, ClaimAhead] = {}  # by SQS message id
        if len(deliveries) < 2 or breaker.cooling:
            return
        try:
            secret = id_secret()
        except AWS_ERRORS:
            return  # each record finds out at its turn
        jobs: set[str] = set()
        first = deadline.planned_timeout(deliveries[0].body)  # the job that runs while the others wait
        now = time.time()
        probe: Future[job_store.ClaimResult] | None = None
        for delivery in deliveries:
            try:
                message = read_message(delivery.body, sent_at=delivery.sent_at, secret=secret)
            except UnreadableMessage:
                continue
            if isinstance(message, OutcomeMessage) or job_types.lookup(message.type) is None:
                continue
            if delivery.seconds_left < deadline.seconds_needed_to_start(message):
                continue  # handed back at its turn
            if message.id in jobs:
                continue  # the same job twice: the second delivery finds it claimed at its turn
            jobs.add(message.id)
            span = deadline.cover_span(first, deadline.timeout_of(message), delivery.seconds_left)
            lease = deadline.lease_seconds(span)
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
                if isinstance(claim, job_store.Claimed):
                    job_store.release(ahead.job_id, claim.token)


def _claim_after(
    probe: Future[job_store.ClaimResult] | None, message: JobMessage, message_id: str, now: float, lease: int
) -> job_store.ClaimResult:
    """Claim once the batch's first claim has answered (`probe`), unless it found the store failing:
    then this claim fails as that one did, without a call. A store blip costs a batch one failed
    call, as claims made in turn did, not ten, and its jobs run unclaimed (or hand back) at once."""
    if probe is not None:
        error = probe.exception()
        if error is not None and is_outage(error):
            raise error
    return job_store.claim(message, message_id, now, lease, single_attempt=True)


def lease_for_its_turn(job_id: str, token: str, lease_end: float, timeout: int, breaker: StoreBreaker) -> float | None:
    """A claim made ahead covers its job for the batch's first job's timeout (or its own): by the job's
    turn it may end too soon for the job to run. Extended then to the job's own lease from now; None if
    the claim no longer holds the job (it ran out and another delivery took it, or it was cancelled):
    the job is not run here. If the store fails, the job runs on the lease it has."""
    wanted = time.time() + deadline.lease_seconds(timeout)
    if not deadline.ends_too_soon(lease_end, wanted):
        return lease_end
    try:
        return wanted if job_store.extend_lease(job_id, token, wanted) else None
    except AWS_ERRORS as error:
        if is_outage(error):
            breaker.failed()
        return lease_end
