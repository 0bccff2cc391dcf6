"""Receive: judge one delivery (the producer, shared/worker/producer.py, hands each of a batch's to it on a
thread of its own). Read its message, claim its job, run it through the executor, and have the batch's
completer settle the verdict, so that its outcome is recorded exactly once.

Delivery is at least once. The claim is a conditional write, so of several deliveries of one job
only one runs at a time, and only the attempt that holds the claim can record an outcome. A message
that cannot run is never retried: it goes to the DLQ with its reason, and its job (if its id
verifies) is recorded `dead` with that reason.

While the store fails, a job's first delivery runs without a claim (shared/worker/admit/unclaimed.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

from shared.aws import metrics
from shared.batches import follow_ups
from shared.jobs import job_types
from shared.model.message import JobMessage, UnreadableMessage
from shared.model.outcome import Outcome, OutcomeMessage, read_message
from shared.model.states import Status
from shared.store.id_secret import id_secret
from shared.store.jobs import job_claims
from shared.worker.admit import debounced as debounce_gate
from shared.worker.admit import store_gate, unclaimed, unique_runs, waiting
from shared.worker.batch import Batch
from shared.worker.breaker import AWS_ERRORS, is_outage
from shared.worker.complete.completer import Settled
from shared.worker.delivery import Delivery
from shared.worker.run import cover, executor
from shared.worker.verdicts import (
    Dead,
    Duplicate,
    Ended,
    HandBack,
    LateOutcome,
    Resuspended,
    Unreadable,
    Verdict,
)


def handle(delivery: Delivery, batch: Batch) -> Settled:
    """Handle one delivery of a queue message: what it answers, acknowledged or handed back."""
    verdict = receive(delivery, batch)
    settled = batch.completer.settle(verdict, delivery)
    if (
        isinstance(verdict, LateOutcome)
        and verdict.outcome.status is Status.FAILED
        and settled in (Outcome.RECORDED_LATE, Outcome.DUPLICATE)
    ):
        # A failed attempt's outcome, recorded: the message is also the job's retry, which runs as the
        # job's own message would (its DLQ entry is the job, redrivable as any).
        job = verdict.outcome.job
        retry = replace(delivery, body=job.to_json())
        return batch.completer.settle(work(job, retry, batch, first_run=False), retry)
    return settled


def id_secret_for(delivery: Delivery, batch: Batch) -> bytes | HandBack:
    """The id secret that verifies the delivery's job id; a hand-back while the store cannot give it (no cooling
    check: once read, the secret is cached, and a cached read never fails)."""
    return store_gate.asked(delivery, batch, id_secret, doing="reading the id secret")


def receive(delivery: Delivery, batch: Batch) -> Verdict:
    """What to do with one delivery of a queue message (running its job if it runs now)."""
    secret = id_secret_for(delivery, batch)
    if isinstance(secret, HandBack):
        return secret
    try:
        parsed = read_message(delivery.body, sent_at=delivery.sent_at, secret=secret)
        if isinstance(parsed, OutcomeMessage):
            return _late_outcome(parsed, delivery, batch)
        message = parsed
        if job_types.lookup(message.type) is None:
            raise UnreadableMessage(f"unknown job type {message.type!r} on this worker", job=message.to_dict())
    except UnreadableMessage as unreadable:
        return Unreadable(unreadable.reason, unreadable.job)
    if (debounced := debounce_gate.judge(message, delivery, batch)) is not None:
        return debounced  # it waits for its group, or ends skipped: superseded by a later job of its key
    if (duplicate := unique_runs.judge(message, delivery, batch)) is not None:
        return duplicate  # a schedule's run whose unique key another job holds: it ends skipped
    if delivery.seconds_left < cover.seconds_needed_to_start(message):
        # Handed back for an invocation with the time: a job started here would be cut off by the
        # invocation's own timeout, which holds every record of the batch for the visibility timeout.
        return delivery.hand_back("too little of the invocation left to start this job within its timeout")
    if (over_cap := batch.share.waiting(delivery)) is not None:
        # Waits unclaimed, using no attempt: its tenant's other jobs hold its share of the fleet.
        why = waiting.WaitReason.RUNNING_CAP
        return waiting.wait(message, delivery, why, over_cap.reason, delay=over_cap.delay_seconds, visibility_set=True)
    if delivery.first_receive:
        metrics.job_started(message.enqueued_at)
    batch.completer.arrived(message)  # while the store fails, whatever carries the job on gives it back later
    return work(message, delivery, batch)


def work(message: JobMessage, delivery: Delivery, batch: Batch, *, first_run: bool = True) -> Verdict:
    """Claim and run the job of a readable message whose id verified, under its concurrency key's slot
    if it has one (waiting in the batch for it, unclaimed: shared/worker/admit/key_slots.py).

    `first_run`: False where the delivery carries a retry (an outcome message): never run unclaimed.
    """
    admission = batch.share.admit(message, delivery)
    if admission.refused is not None:
        return admission.refused
    try:
        return _claim_and_run(message, delivery, batch, first_run=first_run)
    finally:
        admission.release()  # the job has run (or never started): its key's slot passes on


def _claim_and_run(message: JobMessage, delivery: Delivery, batch: Batch, *, first_run: bool) -> Verdict:
    timeout = cover.timeout_of(message)
    ahead = batch.claims.take(message, delivery)
    if ahead is None and batch.breaker.cooling:
        why = "the store failed moments ago"
        return unclaimed.without_claim(message, delivery, timeout, why, first_run=first_run)
    if ahead is None:
        claimed_at, lease = time.time(), cover.lease_seconds(timeout)
    else:
        claimed_at, lease = ahead.claimed_at, ahead.lease
    try:
        if ahead is None:
            claim = job_claims.claim(message, delivery.message_id, claimed_at, lease, single_attempt=True)
        else:
            claim = ahead.claim.result()
    except AWS_ERRORS as error:
        if not is_outage(error):
            return Unreadable(f"the store refuses this job: {error}")
        batch.breaker.failed()
        why = f"store unavailable for the claim: {error}"
        return unclaimed.without_claim(message, delivery, timeout, why, first_run=first_run)
    match claim:
        case job_claims.Finished(status=status, retries=retries):
            if status is not None and follow_ups.has_follow_ups(message):
                return Duplicate(Ended(message.in_run(retries), status))
            return Duplicate()
        case job_claims.HeldElsewhere(by_this_message=True, lease_left_seconds=left):
            # Our own earlier attempt may still be running (or died recording its outcome):
            # come back when its lease has run out.
            return HandBack(left + 1, "an earlier delivery of this message still holds the job")
        case job_claims.HeldElsewhere():
            # Another message for the same job holds it; that message stays on the queue
            # until the holder records an outcome, so it will come back if the holder dies.
            return Duplicate()
        case job_claims.Contended():
            return delivery.hand_back("another delivery of this job changed it while this one claimed it")
        case job_claims.Foreign():
            return Unreadable("forged job message: the job's record belongs to another tenant")
        case job_claims.Exhausted(attempts=attempts):
            reason = f"gave up after {attempts} attempts that ended without an outcome (worker crash or timeout)"
            return Dead(reason, message)
        case job_claims.Asleep(resume_in_seconds=resume_in, by_this_message=by_this_message):
            return _asleep(message, delivery, resume_in, by_this_message)
        case job_claims.Claimed(
            attempt=attempt, token=token, max_attempts=max_attempts, retries=retries, journal=journal
        ):
            # The record's number of attempts counts, and its run (a batch counts each run's end).
            message = replace(message, max_attempts=max_attempts).in_run(retries)
            return executor.run_claimed(
                message, attempt, token, timeout, claimed_at + lease, run_number=retries, journal=journal
            )
    raise AssertionError(f"unexpected claim result {claim!r}")


# A wake message this early (two machines' clocks, Scheduler's whole seconds) comes back for the rest; an
# earlier one is stale (its job was woken otherwise and waits again), acknowledged.
_EARLY_WAKE_SECONDS = 60


def _asleep(message: JobMessage, delivery: Delivery, resume_in: float | None, by_this_message: bool) -> Verdict:
    """A durable job waiting, met by a message: the one that suspended it, delivered again (its suspension is
    done over: the step read once more, the job woken if it resolved meanwhile), an early wake (back later),
    or a stale one (acknowledged)."""
    if by_this_message:
        return Resuspended(message)
    if resume_in is not None and 0 < resume_in <= _EARLY_WAKE_SECONDS:
        return HandBack(math.ceil(resume_in) + 1, "a waiting job's wake message, early")
    return Duplicate()


def _late_outcome(outcome: OutcomeMessage, delivery: Delivery, batch: Batch) -> Verdict:
    """An outcome that an earlier attempt sent, to record now; a `failed` one then runs the job's retry, claimed."""
    if batch.breaker.cooling:
        return delivery.hand_back("the store failed moments ago: not recording now")
    if outcome.status is Status.FAILED and delivery.seconds_left < cover.seconds_needed_to_start(outcome.job):
        return delivery.hand_back("too little of the invocation left to start this job within its timeout")
    return LateOutcome(outcome)
