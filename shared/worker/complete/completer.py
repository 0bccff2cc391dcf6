"""The completer: applies a verdict (shared/worker/verdicts.py) to a delivery. Every store write that
records a delivery's outcome, every DLQ send, every visibility change and every waiting job's message
sent again of the worker happens here.

A finished job's outcome write runs beside the batch's next jobs: the k-th job of a batch then waits
for the k - 1 jobs before it to run and claim, not also for their outcome writes (the herd's crons
arrive 10 to a batch; on a 2-core machine each write costs 10-20 ms of the next job's wait). Outcome
messages (a store blip's) go in one SendMessageBatch when the batch ends: ten SendMessage calls held
a batch's environment for 225-360 ms at the herd's cron second. `finish` waits for both.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future

from botocore.exceptions import ParamValidationError

from shared.aws import queue
from shared.aws.clients import aws_error_code
from shared.batches import follow_ups
from shared.errors import CorralError
from shared.jobs import far_future
from shared.model.message import JobMessage
from shared.model.outcome import Outcome, OutcomeMessage, Started
from shared.model.states import Status
from shared.store.jobs import job_claims, job_store, waiting_jobs
from shared.waits import children, resume
from shared.worker.breaker import AWS_ERRORS, StoreBreaker, is_outage
from shared.worker.complete import carried as outcome_messages
from shared.worker.complete.carried import Settled
from shared.worker.delivery import Delivery
from shared.worker.run.cover import HiddenBatch
from shared.worker.verdicts import (
    WAITING_ATTRIBUTE,
    Attempt,
    Completed,
    Dead,
    DeadLettered,
    Duplicate,
    Ended,
    HandBack,
    LateOutcome,
    RanUnclaimed,
    Resuspended,
    Retry,
    Suspend,
    Unreadable,
    Verdict,
    Wait,
)

# An outcome message sent because the store failed is first delivered this much later: received during
# the blip it could only be handed back, and the blip's outcomes return spread out over its end instead
# of together, beside the new jobs.
OUTCOME_DELAY_SECONDS = 3


class FollowUpsPending(CorralError):
    """A job is recorded finished, but what its end sets off (its batch, its callbacks) could not be done:
    its delivery is handed back, and the next one, finding the job finished, does it."""

    def __init__(self, hand_back: HandBack) -> None:
        super().__init__(hand_back.reason)
        self.hand_back = hand_back


class Completer:
    """Settles a batch's deliveries: one per batch, over the process's outcome-writing threads.

    `hidden`: the batch's messages, kept hidden while this invocation may still need them.
    """

    def __init__(self, breaker: StoreBreaker, writers: Executor, hidden: HiddenBatch) -> None:
        self._breaker = breaker
        self._writers = writers
        self._hidden = hidden
        self._writes: list[tuple[Delivery, Future[None]]] = []
        self._carried: list[outcome_messages.Carried] = []

    def hide(self, seconds_left: float) -> None:
        """Hide the batch's messages as it begins (cover.HiddenBatch), on an outcome-writing thread:
        the jobs' claims and runs need not wait for the SQS call (measured, it was ~2 ms of each
        single-job batch's start here, more under load: docs/decisions/the-limit-and-a-peer.md). It lands within
        that call's time; any later visibility change of the batch's (a hand-back) waits for it."""
        self._hidden.begin_on(self._writers, seconds_left)

    def settle(self, verdict: Verdict, delivery: Delivery) -> Settled:
        """Apply `verdict` to `delivery`: what the delivery answers. A finished job's outcome write and an
        outcome message are under way until `finish`, which hands the delivery back if they fail."""
        match verdict:
            case HandBack():
                return self._hand_back(verdict, delivery)
            case Wait():
                return self._wait(verdict, delivery)
            case Duplicate(ended=Ended() as ended):
                pending = self._follow_up(ended.job, ended.status, delivery)
                return Outcome.DUPLICATE if pending is None else self._hand_back(pending, delivery)
            case Duplicate():
                return Outcome.DUPLICATE
            case Unreadable():
                return self._unreadable(verdict, delivery)
            case Completed():
                self._after_the_job(delivery, lambda: self._write_completed(verdict, delivery))
                return Outcome.SUCCEEDED
            case Retry() | Dead(attempt=Attempt()):
                return self._end_attempt(verdict, delivery)
            case Dead():
                # Every attempt died without an outcome. DLQ first: a failure here leaves the job to retry.
                queue.send_to_dlq(delivery.body, verdict.reason)
                if job_store.record_dead(verdict.job, verdict.reason, time.time()):
                    return self._ended(verdict.job, Status.DEAD, Outcome.DEAD, delivery)
                return Outcome.DEAD
            case RanUnclaimed():
                return self._ran_unclaimed(verdict, delivery)
            case LateOutcome():
                return self._late_outcome(verdict, delivery)
            case DeadLettered():
                return self._dead_lettered(verdict, delivery)
            case Suspend():
                return self._suspend(verdict, delivery)
            case Resuspended():
                return self._resuspended(verdict.job, delivery)
        raise AssertionError(f"unexpected verdict {verdict!r}")

    def arrived(self, job: JobMessage) -> bool:
        """A far-future job's schedule fired: its quota unit comes back (far_future.arrived; a no-op for
        any other job). False while the store fails: the job's outcome message, or its next delivery if
        it is handed back, gives it back then (it is idempotent)."""
        if job.due_at is None:
            return True
        if self._breaker.cooling:
            return False
        try:
            far_future.arrived(job, single_attempt=True)
        except AWS_ERRORS as error:
            if not is_outage(error):
                raise
            self._breaker.failed()
            return False
        return True

    def finish(self) -> list[outcome_messages.LateHandBack]:
        """The batch's end: wait for its outcome writes, send its outcome messages together, and hand
        back each delivery whose write or message failed. Returns those deliveries."""
        late: list[outcome_messages.LateHandBack] = []
        for delivery, future in self._writes:
            error = future.exception()
            if isinstance(error, FollowUpsPending):
                late.append(outcome_messages.LateHandBack(delivery, error.hand_back))
            elif error is not None:
                late.append(outcome_messages.unexpected(delivery, error))
        late += outcome_messages.send_all(self._carried)
        for each in late:
            self._hand_back(each.hand_back, each.delivery)
        self._hidden.landed()  # not after the invocation: the event source then deletes or returns the messages
        return late

    # Verdicts -----------------------------------------------------------------------------------------

    def _hand_back(self, hand_back: HandBack, delivery: Delivery) -> HandBack:
        if delivery.receipt_handle is not None and not hand_back.visibility_set:
            self._hidden.landed()  # the cover's visibility first, then the hand-back's
            queue.retry_later(delivery.receipt_handle, hand_back.delay_seconds, queue_url=delivery.queue_url)
        return hand_back

    def _wait(self, wait: Wait, delivery: Delivery) -> Settled:
        """A job waiting its turn: handed back, or near the queue's receive budget sent again as a fresh
        message carrying its wait (shared/worker/admit/waiting.py), this one then acknowledged. A send that
        fails hands the message back instead: it spends one receive, and the next one tries again."""
        if wait.shown is not None and not self._breaker.cooling:
            # Best effort: its view says why it waits; the wait itself needs no write.
            with contextlib.suppress(*AWS_ERRORS):
                waiting_jobs.show_queued_wait(wait.job, wait.shown)
        if not wait.resend:
            return self._hand_back(wait.hand_back(), delivery)
        try:
            queue.send_waiting(wait.job, wait.delay_seconds, {WAITING_ATTRIBUTE: wait.waited.to_attribute()})
        except (*AWS_ERRORS, ParamValidationError):
            return self._hand_back(wait.hand_back(), delivery)
        return Outcome.RESENT

    def _follow_up(self, job: JobMessage, status: Status, delivery: Delivery) -> HandBack | None:
        """Do what the recorded end of `job` sets off (shared/batches/follow_ups.py, shared/waits/children.py): None
        once done, else the hand-back that brings the delivery back to do it (it finds the job finished)."""
        if not follow_ups.has_follow_ups(job):
            return None
        if self._breaker.cooling:
            return delivery.hand_back("store unavailable for its batch and callbacks: the job is recorded, they wait")
        try:
            follow_ups.job_ended(job, status, single_attempt=True)
            children.child_ended(job.tenant, job.id, job.parent, status, single_attempt=True)
        except AWS_ERRORS as error:
            if is_outage(error):
                self._breaker.failed()
            return delivery.hand_back(f"the job is recorded; its batch and callbacks wait: {error}")
        return None

    def _ended(self, job: JobMessage, status: Status, outcome: Outcome, delivery: Delivery) -> Settled:
        """The answer of a delivery that recorded its job's end: `outcome` once its follow-ups are done."""
        pending = self._follow_up(job, status, delivery)
        return outcome if pending is None else self._hand_back(pending, delivery)

    def _applied(self, settled: Settled, delivery: Delivery) -> Settled:
        return self._hand_back(settled, delivery) if isinstance(settled, HandBack) else settled

    def _suspend(self, verdict: Suspend, delivery: Delivery) -> Settled:
        """Record the job `waiting` (its attempt given back, its lease released), then read its step once more:
        resolved since it was registered (a resolution's flip found the job still running), it is woken now."""
        attempt, suspension = verdict.attempt, verdict.suspension
        try:
            suspended = waiting_jobs.suspend(
                attempt.message.id,
                attempt.token,
                suspension.step,
                suspension.waiting_for,
                suspension.resume_at,
                time.time(),
            )
        except AWS_ERRORS as error:
            return self._applied(self._outcome_not_written(error, attempt, delivery), delivery)
        if not suspended:
            return Outcome.LOST_CLAIM
        return self._resuspended(attempt.message, delivery, step=suspension.step)

    def _resuspended(self, job: JobMessage, delivery: Delivery, *, step: str | None = None) -> Settled:
        """Wake the waiting job if its step (`step`, else the one its journal says) resolved meanwhile."""
        try:
            resume.wake_if_resolved(job.id, step)
        except AWS_ERRORS as error:
            if is_outage(error):
                self._breaker.failed()
            reason = f"store unavailable reading a waiting job's step: {error}"
            return self._hand_back(delivery.hand_back(reason), delivery)
        return Outcome.SUSPENDED

    def _unreadable(self, verdict: Unreadable, delivery: Delivery) -> Settled:
        """A message that cannot run: its job (if its id verified) recorded `dead` with the reason, the
        message in the DLQ with it. The record first: it is written only where there is none, so a retry
        after a failed DLQ send writes nothing twice."""
        if verdict.job is not None:
            try:
                if job_store.record_dead(verdict.job, verdict.reason, time.time()):
                    follow_ups.unrunnable_ended(verdict.job, single_attempt=True)
                    children.unrunnable_ended(verdict.job)
            except AWS_ERRORS as error:
                if is_outage(error):
                    self._breaker.failed()
                    reason = f"store unavailable recording an unrunnable job: {error}"
                    return self._hand_back(delivery.hand_back(reason), delivery)
                # The store refuses the record itself: the DLQ keeps the message and its reason.
        queue.send_to_dlq(delivery.body, verdict.reason)
        return Outcome.UNREADABLE

    def _end_attempt(self, verdict: Retry | Dead, delivery: Delivery) -> Settled:
        """A claimed attempt failed: recorded `failed` and handed back for its retry, or ended `dead`."""
        attempt = verdict.attempt
        assert attempt is not None
        job = attempt.message
        try:
            if isinstance(verdict, Dead):
                queue.send_to_dlq(delivery.body, verdict.reason)  # DLQ first: a failure here leaves the job to retry
                ended = job_store.record_dead(
                    job, verdict.reason, time.time(), token=attempt.token, started=attempt.started
                )
            elif not job_store.record_failure(
                job.id, attempt.token, verdict.reason, time.time(), started=attempt.started
            ):
                return Outcome.LOST_CLAIM
        except AWS_ERRORS as error:
            return self._applied(self._outcome_not_written(error, attempt, delivery), delivery)
        if isinstance(verdict, Dead):
            return self._ended(job, Status.DEAD, Outcome.DEAD, delivery) if ended else Outcome.DEAD
        return self._hand_back(HandBack(verdict.delay_seconds, verdict.reason), delivery)

    def _outcome_not_written(self, error: Exception, attempt: Attempt, delivery: Delivery) -> Settled:
        """A claimed attempt ran, and writing its outcome failed with `error`."""
        if not is_outage(error):
            # The store refuses this outcome (e.g. an item over its size limit): it would refuse it on
            # every attempt, so the job ends here, with the store's reason.
            reason = f"the store refused the job's outcome ({aws_error_code(error) or type(error).__name__})"
            queue.send_to_dlq(delivery.body, reason)
            job_store.record_dead(attempt.message, reason, time.time(), token=attempt.token)
            return Outcome.DEAD
        # The outcome is not recorded, and this message holds the lease: come back when the lease has
        # run out, and the claim starts a new attempt (the job runs again).
        self._breaker.failed()
        lease_left = attempt.lease_end - time.time()
        return HandBack(max(lease_left, 0) + 1, f"store unavailable recording the outcome: {error}")

    def _write_completed(self, verdict: Completed, delivery: Delivery) -> None:
        attempt = verdict.attempt
        job = attempt.message
        try:
            recorded = job_store.complete(
                job.id, attempt.token, verdict.result, verdict.finished_at, started=attempt.started, single_attempt=True
            )
        except AWS_ERRORS as error:
            if not is_outage(error):
                self._outcome_not_written(error, attempt, delivery)
                return
            self._breaker.failed()
            # The job ran; rather than run it again when the lease ends, carry its outcome to a later delivery.
            carried = OutcomeMessage(
                job,
                Status.SUCCEEDED,
                attempt.started.at,
                verdict.finished_at,
                result=verdict.result,
                attempt_token=attempt.token,
            )
            store_error = error

            def not_sent(reason: str) -> Settled:
                # Retried when the lease ends, as any attempt whose outcome was lost.
                return self._outcome_not_written(store_error, attempt, delivery)

            self._carried.append(outcome_messages.Carried(delivery, carried, OUTCOME_DELAY_SECONDS, not_sent))
            return
        if recorded and (pending := self._follow_up(job, Status.SUCCEEDED, delivery)) is not None:
            raise FollowUpsPending(pending)

    def _ran_unclaimed(self, verdict: RanUnclaimed, delivery: Delivery) -> Outcome:
        outcome = verdict.outcome
        if outcome.status is Status.DEAD:
            queue.send_to_dlq(delivery.body, outcome.error or "")  # DLQ first, as a claimed attempt does

        def not_sent(reason: str) -> Settled:
            why = f"ran without a claim while the store failed, but its outcome could not be sent: {reason}"
            return delivery.hand_back(why)

        def record_or_carry() -> None:
            if outcome.status.finished and self._record_now(outcome, delivery):
                return
            delay = max(verdict.delay_seconds, OUTCOME_DELAY_SECONDS)
            self._carried.append(outcome_messages.Carried(delivery, outcome, delay, not_sent))

        self._after_the_job(delivery, record_or_carry)
        return {Status.SUCCEEDED: Outcome.SUCCEEDED, Status.DEAD: Outcome.DEAD}.get(outcome.status, Outcome.RETRY_SENT)

    def _record_now(self, outcome: OutcomeMessage, delivery: Delivery) -> bool:
        """Record a finished unclaimed run's outcome at once if the store seems back (a blip's last moments):
        no outcome message to send, receive and record later. False: it goes by message after all."""
        if self._breaker.cooling or not self.arrived(outcome.job):
            return False
        try:
            recorded = job_store.record_carried(outcome, delivery.message_id, single_attempt=True)
        except AWS_ERRORS as error:
            if is_outage(error):
                self._breaker.failed()
            return False  # the message carries it (a store that refuses it now refuses it there, with the DLQ)
        if recorded and (pending := self._follow_up(outcome.job, outcome.status, delivery)) is not None:
            raise FollowUpsPending(pending)
        return True

    def _late_outcome(self, verdict: LateOutcome, delivery: Delivery) -> Settled:
        """Record an outcome that an earlier attempt sent in a message."""
        outcome = verdict.outcome
        if not self.arrived(outcome.job):
            return self._hand_back(
                delivery.hand_back("store unavailable giving back a far-future job's unit"), delivery
            )
        try:
            if outcome.attempt_token is not None:  # a claimed attempt's: recorded as that attempt's, if it still holds
                recorded = job_store.complete(
                    outcome.job.id,
                    outcome.attempt_token,
                    outcome.result,
                    outcome.finished_at,
                    started=Started(outcome.started_at),
                    single_attempt=True,
                )
            else:
                recorded = job_store.record_carried(outcome, delivery.message_id, single_attempt=True)
        except AWS_ERRORS as error:
            if is_outage(error):
                self._breaker.failed()
                reason = f"store unavailable recording a carried outcome: {error}"
                return self._hand_back(delivery.hand_back(reason), delivery)
            # The store refuses it (and would every time): the DLQ keeps the job, with the reason.
            reason = f"the store refused an outcome recorded late ({aws_error_code(error) or type(error).__name__})"
            queue.send_to_dlq(outcome.job.to_json(), reason)
            return Outcome.UNREADABLE
        answer = Outcome.RECORDED_LATE if recorded else Outcome.DUPLICATE
        if not outcome.status.finished or not follow_ups.has_follow_ups(outcome.job):
            return answer
        if recorded:
            return self._ended(outcome.job, outcome.status, answer, delivery)
        return self._ended_as_recorded(outcome.job, answer, delivery)

    def _dead_lettered(self, verdict: DeadLettered, delivery: Delivery) -> Settled:
        """A job's message found in the backstop with no outcome recorded: the job recorded `dead` with the
        reason (unless it has finished), what its end sets off done, then the message buried in the DLQ
        with the reason, where operators redrive. The record first: the message waits in the backstop
        meanwhile, and a delivery of it seen twice records nothing twice (at worst, buries it twice)."""
        job = verdict.job
        if self._breaker.cooling or not self.arrived(job):
            return self._hand_back(delivery.hand_back("store unavailable recording a dead-lettered job"), delivery)
        try:
            found = job_store.record_dead_lettered(job, verdict.reason, time.time(), single_attempt=True)
        except AWS_ERRORS as error:
            if is_outage(error):
                self._breaker.failed()
                reason = f"store unavailable recording a dead-lettered job: {error}"
                return self._hand_back(delivery.hand_back(reason), delivery)
            # The store refuses the record itself (and would every time): the DLQ keeps the job, with the reason.
            refused = f"{verdict.reason}; the store refused its record ({aws_error_code(error)})"
            queue.send_to_dlq(job.to_json(), refused)
            return Outcome.UNREADABLE
        match found:
            case job_claims.HeldElsewhere(lease_left_seconds=left):
                # An attempt of the job still runs, from another message: ask again when its lease has ended.
                held = HandBack(left + 1, "an attempt of this dead-lettered job still holds it")
                return self._hand_back(held, delivery)
            case job_claims.Foreign():
                queue.send_to_dlq(delivery.body, "forged job message: the job's record belongs to another tenant")
                return Outcome.UNREADABLE
            case job_claims.Finished(status=status, retries=retries) if status is not Status.DEAD:
                # A message left over of a job that ended: nothing to record or keep, but what its end sets off
                # is done (idempotent), as its delivery on the jobs queue would: it may be the only one left to
                # do it (a member cancelled before any worker read it is counted in its batch only by its
                # message; a delivery handed back to send a callback may have spent the receive budget).
                pending = None if status is None else self._follow_up(job.in_run(retries), status, delivery)
                return Outcome.DUPLICATE if pending is None else self._hand_back(pending, delivery)
            case job_claims.Finished(retries=retries) | job_store.DeadNow(retries=retries):
                if (pending := self._follow_up(job.in_run(retries), Status.DEAD, delivery)) is not None:
                    return self._hand_back(pending, delivery)
                queue.send_to_dlq(job.to_json(), verdict.reason)
                return Outcome.DEAD_LETTERED if isinstance(found, job_store.DeadNow) else Outcome.DUPLICATE
        raise AssertionError(f"unexpected record answer {found!r}")

    def _ended_as_recorded(self, job: JobMessage, answer: Outcome, delivery: Delivery) -> Settled:
        """A carried outcome found another recorded first: the follow-ups of the end the record says."""
        try:
            record = job_store.get(job.id, consistent=True, single_attempt=True)
        except AWS_ERRORS as error:
            if is_outage(error):
                self._breaker.failed()
            return self._hand_back(delivery.hand_back(f"store unavailable reading a finished job: {error}"), delivery)
        if record is None or not record.status.finished:
            return answer
        return self._ended(job.in_run(record.retries), record.status, answer, delivery)

    # Writes beside the batch's next jobs -----------------------------------------------------------------

    def _after_the_job(self, delivery: Delivery, write: Callable[[], None]) -> None:
        """Run `write` (a finished job's outcome write) beside the batch's next job."""
        self._writes.append((delivery, self._writers.submit(write)))
