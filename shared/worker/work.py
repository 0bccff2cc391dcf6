"""Work: read a delivered message, claim its job, run it, record its outcome exactly once.

Delivery is at least once. The claim is a conditional write, so of several
deliveries of one job only one runs at a time, and only the attempt that holds
the claim can record an outcome. A message that cannot run is never retried:
it goes to the DLQ with its reason, and its job (if its id verifies) is recorded
`dead` with that reason.

While the store fails, a job's first delivery runs without a claim (unless its type is
exclusive), and its outcome travels on the jobs queue in an outcome message that a later
delivery records, once, with a conditional write (docs/architecture.md "Store blips: jobs
keep starting").
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from shared import settings
from shared.aws import clients, metrics, queue
from shared.aws.clients import aws_error_code
from shared.jobs import far_future, job_types
from shared.model import JobMessage, Outcome, OutcomeMessage, Status, UnreadableMessage, read_message
from shared.store import job_store
from shared.store.id_secret import id_secret
from shared.worker import deadline, job_logging

# A store (or queue) call that failed after botocore's own retries (throttling, 5xx, timeouts): a blip.
_AWS_ERRORS = (ClientError, BotoCoreError)

# Every store call on the worker's path has a fallback (run unclaimed, carry the outcome in a message,
# hand the delivery back), so each makes one attempt, never botocore's backoff: a batch of 10 that
# retried every record would hold its jobs for seconds and could outlast the invocation's timeout.
# After a failure, this process leaves the store alone for a moment: a blip costs each process one
# failed call per STORE_COOLDOWN_SECONDS, and the first call after it finds out whether the store is back.
STORE_COOLDOWN_SECONDS = 0.5
# An outcome message sent because the store failed is first delivered this much later: received during
# the blip it could only be handed back, and the blip's outcomes return spread out over its end instead
# of together, beside the new jobs.
OUTCOME_DELAY_SECONDS = 3
_store_down_until = 0.0


def _store_failed() -> None:
    global _store_down_until
    _store_down_until = time.monotonic() + STORE_COOLDOWN_SECONDS


def is_outage(error: Exception) -> bool:
    """A failed AWS call worth retrying later. A request AWS (or botocore) rejects as invalid
    fails the same way every time: retrying it is not waiting out a blip."""
    if isinstance(error, ParamValidationError):
        return False
    return isinstance(error, _AWS_ERRORS) and aws_error_code(error) != "ValidationException"


# Of the init phase's 10 s: no call attempt starts that could end later (an attempt's worst case is
# its connect + read timeouts, 7 s), so a store that hangs costs the init phase at most this.
INIT_SECONDS = 9


def prepare() -> None:
    """Make what every delivery uses before the first one arrives: the store's and the queue's clients
    (a client loads its service model: ~0.5-1 s on a busy 2-core machine, paid by the first batch's
    first record otherwise) and the id secret. Called in the function's init phase; a store that
    fails now is read again at the first delivery."""
    with clients.deadline(INIT_SECONDS):
        for prepare_one in (job_store.prepare_clients, queue.prepare_client, id_secret):
            with contextlib.suppress(*_AWS_ERRORS):
                prepare_one()


class RetryLater(Exception):
    """Leave the message on the queue; it comes back after `seconds`."""

    def __init__(self, seconds: float, reason: str) -> None:
        super().__init__(f"retry in {seconds:.0f}s: {reason}")
        self.seconds = seconds
        self.reason = reason


@dataclass(frozen=True)
class Delivery:
    message_id: str
    body: str
    receive_count: int = 1  # SQS ApproximateReceiveCount: this is the n-th receive of the message
    sent_at: float = 0.0  # SQS SentTimestamp, epoch seconds
    seconds_left: float = math.inf  # of the invocation handling it

    def hand_back(self, reason: str) -> RetryLater:
        """Come back soon, later each time: every hand-back spends one receive of the queue's budget."""
        return RetryLater(queue.hand_back_seconds(self.receive_count), reason)


def receive(delivery: Delivery) -> Outcome:
    """Handle one delivery of a queue message; returns what happened. Raises RetryLater to redeliver."""
    try:
        secret = id_secret()
    except _AWS_ERRORS as error:
        if not is_outage(error):
            raise
        _store_failed()
        raise delivery.hand_back(f"store unavailable reading the id secret: {error}") from error
    try:
        parsed = read_message(delivery.body, sent_at=delivery.sent_at, secret=secret)
        if isinstance(parsed, OutcomeMessage):
            return _deliver_outcome(parsed, delivery)
        message = parsed
        if job_types.lookup(message.type) is None:
            raise UnreadableMessage(f"unknown job type {message.type!r} on this worker", job=message.to_dict())
    except UnreadableMessage as unreadable:
        return _reject(unreadable, delivery)
    if delivery.seconds_left < deadline.seconds_needed_to_start(message):
        # Handed back for an invocation with the time: a job started here would be cut off by the
        # invocation's own timeout, which holds every record of the batch for the visibility timeout.
        raise delivery.hand_back("too little of the invocation left to start this job within its timeout")
    if delivery.receive_count == 1:
        metrics.job_started(message.enqueued_at)
    _give_back_unit(message)  # while the store fails, whatever carries the job on gives it back later
    return work(message, delivery)


def _give_back_unit(job: JobMessage) -> bool:
    """A far-future job's schedule fired: its quota unit comes back (far_future.arrived; a no-op for
    any other job). False while the store fails: the job's outcome message, or its next delivery if
    it is handed back, gives it back then (it is idempotent)."""
    if job.due_at is None:
        return True
    if time.monotonic() < _store_down_until:
        return False
    try:
        far_future.arrived(job, single_attempt=True)
    except _AWS_ERRORS as error:
        if not is_outage(error):
            raise
        _store_failed()
        return False
    return True


def _reject(unreadable: UnreadableMessage, delivery: Delivery) -> Outcome:
    """A message that cannot run: its job (if its id verified) recorded `dead` with the reason, the
    message in the DLQ with it. The record first: it is written only where there is none, so a retry
    after a failed DLQ send writes nothing twice."""
    if unreadable.job is not None:
        try:
            job_store.record_dead(unreadable.job, unreadable.reason, time.time())
        except _AWS_ERRORS as error:
            if is_outage(error):
                _store_failed()
                raise delivery.hand_back(f"store unavailable recording an unrunnable job: {error}") from error
            # The store refuses the record itself: the DLQ keeps the message and its reason.
    queue.send_to_dlq(delivery.body, unreadable.reason)
    return Outcome.UNREADABLE


def work(message: JobMessage, delivery: Delivery, *, first_run: bool = True) -> Outcome:
    """Handle one delivery of a readable message whose id verified. Raises RetryLater to redeliver.

    `first_run`: False where the delivery carries a retry (an outcome message): never run unclaimed.
    """
    timeout = deadline.timeout_of(message)
    ahead = _claimed_ahead(message, delivery)
    if ahead is None and time.monotonic() < _store_down_until:
        return _without_claim(message, delivery, timeout, "the store failed moments ago", first_run=first_run)
    if ahead is None:
        claimed_at, lease = time.time(), deadline.lease_seconds(timeout)
    else:
        claimed_at, lease = ahead.claimed_at, ahead.lease
    try:
        if ahead is None:
            claim = job_store.claim(message, delivery.message_id, claimed_at, lease, single_attempt=True)
        else:
            claim = ahead.claim.result()
    except _AWS_ERRORS as error:
        if not is_outage(error):
            return _reject(UnreadableMessage(f"the store refuses this job: {error}"), delivery)
        _store_failed()
        return _without_claim(
            message, delivery, timeout, f"store unavailable for the claim: {error}", first_run=first_run
        )
    match claim:
        case job_store.Finished():
            return Outcome.DUPLICATE
        case job_store.HeldElsewhere(by_this_message=True, lease_left_seconds=left):
            # Our own earlier attempt may still be running (or died recording its outcome):
            # come back when its lease has run out.
            raise RetryLater(left + 1, "an earlier delivery of this message still holds the job")
        case job_store.HeldElsewhere():
            # Another message for the same job holds it; that message stays on the queue
            # until the holder records an outcome, so it will come back if the holder dies.
            return Outcome.DUPLICATE
        case job_store.Contended():
            raise delivery.hand_back("another delivery of this job changed it while this one claimed it")
        case job_store.Foreign():
            reason = "forged job message: the job's record belongs to another tenant"
            return _reject(UnreadableMessage(reason), delivery)
        case job_store.Exhausted(attempts=attempts):
            reason = f"gave up after {attempts} attempts that ended without an outcome (worker crash or timeout)"
            queue.send_to_dlq(delivery.body, reason)  # DLQ first: a failure here leaves the job to retry
            job_store.record_dead(message, reason, time.time())
            return Outcome.DEAD
        case job_store.Claimed(attempt=attempt, token=token, max_attempts=max_attempts):
            message = replace(message, max_attempts=max_attempts)  # the record's number of attempts counts
            lease_end = claimed_at + lease
            if ahead is not None:
                lease_end = _lease_for_its_turn(message.id, token, lease_end, timeout)
                if lease_end is None:
                    return Outcome.LOST_CLAIM
            try:
                return _run(message, delivery, attempt, token, timeout, lease_end)
            except _AWS_ERRORS as error:
                return _outcome_not_written(error, message, delivery, token, lease_end)
    raise AssertionError(f"unexpected claim result {claim!r}")


def _outcome_not_written(
    error: Exception, message: JobMessage, delivery: Delivery, token: str, lease_end: float
) -> Outcome:
    """A claimed attempt ran, and writing its outcome failed with `error`."""
    if not is_outage(error):
        # The store refuses this outcome (e.g. an item over its size limit): it would refuse it on
        # every attempt, so the job ends here, with the store's reason.
        reason = f"the store refused the job's outcome ({aws_error_code(error) or type(error).__name__})"
        queue.send_to_dlq(delivery.body, reason)
        job_store.record_dead(message, reason, time.time(), token=token)
        return Outcome.DEAD
    # The outcome is not recorded, and this message holds the lease: come back when the lease has
    # run out, and the claim starts a new attempt (the job runs again).
    _store_failed()
    lease_left = lease_end - time.time()
    raise RetryLater(max(lease_left, 0) + 1, f"store unavailable recording the outcome: {error}") from error


# A batch's outcome writes overlap its next jobs (`batch()`): the k-th job of a batch of 10 then waits
# for the k - 1 jobs before it to run and claim, not also for their outcome writes. The herd's crons
# arrive 10 to a batch; on this 2-core machine each write costs 10-20 ms of the next job's wait.
# Its outcome messages (a store blip's) go in one SendMessageBatch when the batch ends: ten
# SendMessage calls held a batch's environment for 225-360 ms at the herd's cron second.
@dataclass(frozen=True)
class _Carried:
    """An outcome message to send for `delivery`; `if_not_sent(reason)` raises what the delivery answers then."""

    delivery: Delivery
    outcome: OutcomeMessage
    delay_seconds: int
    if_not_sent: Callable[[str], None]


@dataclass(frozen=True)
class _ClaimAhead:
    """A job's claim, made when its batch began; its lease is extended at the job's turn if need be."""

    job_id: str
    claimed_at: float
    lease: int
    claim: Future[job_store.ClaimResult]


@dataclass
class _Batch:
    writes: list[tuple[str, Future[None]]] = field(default_factory=list)
    carried: list[_Carried] = field(default_factory=list)
    claims: dict[str, _ClaimAhead] = field(default_factory=dict)  # by SQS message id


_current: _Batch | None = None
_writers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="outcome-write")
_claimers = ThreadPoolExecutor(max_workers=settings.WORKER_BATCH_SIZE, thread_name_prefix="claim-ahead")


@contextmanager
def batch(deliveries: Sequence[Delivery] = ()) -> Iterator[list[tuple[str, BaseException]]]:
    """Handle `deliveries` (a received batch, in the order they will be handled) within the block.

    The batch's jobs are claimed together as it begins (`_claim_ahead`); a finished job's outcome
    write runs beside the batch's next jobs, and outcome messages wait for the block's end; the end
    waits for every claim and write, then sends the messages together. Yields a list, filled then,
    of (message id, error) for each write or send that failed: RetryLater to hand that message
    back, anything else to report it failed. Outside it (tests calling `work` directly), each job
    is claimed at its turn, and writes and sends happen in line."""
    global _current
    _current = current = _Batch(claims=_claim_ahead(deliveries))
    failed: list[tuple[str, BaseException]] = []
    try:
        yield failed
    finally:
        _give_back_unused(current.claims.values())
        for message_id, future in current.writes:
            error = future.exception()
            if error is not None:
                failed.append((message_id, error))
        _current = None
        failed.extend(_send_carried(current.carried))


def _claim_ahead(deliveries: Sequence[Delivery]) -> dict[str, _ClaimAhead]:
    """Claim the batch's jobs together, each on its own thread: the k-th job of a batch then waits
    for two claims' round trips (the batch's first claim, then its own beside the others'), not k
    of them, behind the k - 1 jobs before it.

    Only what `receive` would claim at its turn: a readable job message of a known type that fits
    the invocation's time, one per job, while the store answers. Each lease, like its message's
    visibility (deadline.HiddenBatch), covers the batch's first job's timeout (or its own, if longer)
    plus the margin: if this worker dies, the batch's jobs can be claimed again that soon, not after
    the batch's timeouts added up. A job whose turn comes later than its lease allows for extends it
    then (`_lease_for_its_turn`). A job that no longer fits when its turn comes is handed back, and
    its claim given back at the batch's end (`_give_back_unused`). The claim records the claim's
    time; the outcome write records when the job's code really started.
    """
    if len(deliveries) < 2 or time.monotonic() < _store_down_until:
        return {}
    try:
        secret = id_secret()
    except _AWS_ERRORS:
        return {}  # each record finds out at its turn
    claims: dict[str, _ClaimAhead] = {}
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
        lease = deadline.lease_seconds(deadline.cover_span(first, deadline.timeout_of(message), delivery.seconds_left))
        claim = _claimers.submit(_claim_after, probe, message, delivery.message_id, now, lease)
        claims[delivery.message_id] = _ClaimAhead(message.id, now, lease, claim)
        probe = probe or claim
    return claims


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


def _lease_for_its_turn(job_id: str, token: str, lease_end: float, timeout: int) -> float | None:
    """A claim made ahead covers its job for the batch's first job's timeout (or its own): by the job's
    turn it may end too soon for the job to run. Extended then to the job's own lease from now; None if
    the claim no longer holds the job (it ran out and another delivery took it, or it was cancelled):
    the job is not run here. If the store fails, the job runs on the lease it has."""
    wanted = time.time() + deadline.lease_seconds(timeout)
    if not deadline.ends_too_soon(lease_end, wanted):
        return lease_end
    try:
        return wanted if job_store.extend_lease(job_id, token, wanted) else None
    except _AWS_ERRORS as error:
        if is_outage(error):
            _store_failed()
        return lease_end


def _give_back_unused(claims: Iterable[_ClaimAhead]) -> None:
    """Claims made ahead that no record used (its record was handed back before its job could start,
    e.g. too little of the invocation was left by its turn): each job is queued again, so its next
    delivery claims it at once instead of waiting out the lease. Best effort: the leases end anyway,
    and nothing here may fail the batch, whose records are answered already."""
    for ahead in claims:
        with contextlib.suppress(Exception):
            claim = ahead.claim.result()
            if isinstance(claim, job_store.Claimed):
                job_store.release(ahead.job_id, claim.token)


def _claimed_ahead(message: JobMessage, delivery: Delivery) -> _ClaimAhead | None:
    """The claim `_claim_ahead` made for this delivery of this job, if any (taken: used once)."""
    if _current is None:
        return None
    ahead = _current.claims.get(delivery.message_id)
    if ahead is None or ahead.job_id != message.id:
        return None
    del _current.claims[delivery.message_id]
    return ahead


def _after_the_job(delivery: Delivery, write: Callable[[], object]) -> None:
    """Run `write` (a finished job's outcome write), beside the batch's next job when inside `batch()`."""
    if _current is None:
        write()
    else:
        _current.writes.append((delivery.message_id, _writers.submit(write)))


def _carry(carried: _Carried) -> None:
    """Send an outcome message: at the batch's end inside `batch()`, else now (raising if it is not sent)."""
    if _current is not None:
        _current.carried.append(carried)
        return
    for _, error in _send_carried([carried]):
        raise error


def _send_carried(carried: list[_Carried]) -> list[tuple[str, BaseException]]:
    """Send outcome messages together; (message id, error) for each delivery whose message was not sent."""
    if not carried:
        return []
    try:
        reasons = queue.send_outcomes([(each.outcome, each.delay_seconds) for each in carried])
    except (*_AWS_ERRORS, ParamValidationError) as error:
        reasons = [str(error)] * len(carried)
    failed: list[tuple[str, BaseException]] = []
    for each, reason in zip(carried, reasons, strict=True):
        if reason is None:
            continue
        try:
            each.if_not_sent(reason)
        except Exception as error:
            failed.append((each.delivery.message_id, error))
    return failed


def _without_claim(message: JobMessage, delivery: Delivery, timeout: int, why: str, *, first_run: bool) -> Outcome:
    """The store cannot claim: run a first delivery without the claim, or hand it back (nothing happened yet).

    Only a first delivery runs: a message received again may be one whose unclaimed run died
    (its job ran, perhaps), and an exclusive type never runs without the claim.
    """
    job_type = job_types.lookup(message.type)
    if job_type is None or not _may_run_unclaimed(message, delivery, first_run=first_run):
        raise delivery.hand_back(f"{why}: not claiming now")
    return _run_unclaimed(message, job_type, delivery, timeout)


def _may_run_unclaimed(message: JobMessage, delivery: Delivery, *, first_run: bool) -> bool:
    job_type = job_types.lookup(message.type)
    return (
        first_run
        and delivery.receive_count == 1
        and job_type is not None
        and not job_type.is_exclusive(message.payload)
    )


def _run_unclaimed(message: JobMessage, job_type: job_types.JobType, delivery: Delivery, timeout: int) -> Outcome:
    """Run attempt 1 without a claim; its outcome goes to the store by an outcome message, the
    original is then acknowledged. If the outcome cannot be sent, the original comes back and
    runs again under a claim (the job ran twice, and only that claimed run is recorded)."""
    started_at = time.time()
    context = job_types.JobContext(
        job_id=message.id,
        attempt=1,
        max_attempts=message.max_attempts,
        deadline=started_at + timeout,
        logger=job_logging.logger_for(message, 1),
        tenant=message.tenant,
    )
    delay = 0
    try:
        with deadline.time_limit(timeout):
            result = job_type.run(message.payload, context)
    except Exception as error:  # a job's failure is data, whatever it raised
        reason = str(error) if isinstance(error, job_types.JobTimedOut) else f"{type(error).__name__}: {error}"
        retry_after = error.retry_after if isinstance(error, job_types.JobFailed) else None
        if message.max_attempts <= 1 or isinstance(error, job_types.JobDead):
            queue.send_to_dlq(delivery.body, reason)  # DLQ first, as a claimed attempt does
            outcome = OutcomeMessage(message, Status.DEAD, started_at, time.time(), error=reason)
        else:
            outcome = OutcomeMessage(message, Status.FAILED, started_at, time.time(), error=reason)
            delay = min(math.ceil(_retry_delay(job_type, 1, retry_after)), queue.MAX_DELAY_SECONDS)
    else:
        if (problem := _result_problem(result)) is not None:
            queue.send_to_dlq(delivery.body, problem)
            outcome = OutcomeMessage(message, Status.DEAD, started_at, time.time(), error=problem)
        else:
            outcome = OutcomeMessage(message, Status.SUCCEEDED, started_at, time.time(), result=result)

    def not_sent(reason: str) -> None:
        raise delivery.hand_back(
            f"ran without a claim while the store failed, but its outcome could not be sent: {reason}"
        )

    def carry() -> None:
        if outcome.status.finished and _record_now(outcome, delivery):
            return
        _carry(_Carried(delivery, outcome, max(delay, OUTCOME_DELAY_SECONDS), not_sent))

    _after_the_job(delivery, carry)
    return {Status.SUCCEEDED: Outcome.SUCCEEDED, Status.DEAD: Outcome.DEAD}.get(outcome.status, Outcome.RETRY_SENT)


def _record_now(outcome: OutcomeMessage, delivery: Delivery) -> bool:
    """Record a finished unclaimed run's outcome at once if the store seems back (a blip's last moments):
    no outcome message to send, receive and record later. False: it goes by message after all."""
    if time.monotonic() < _store_down_until or not _give_back_unit(outcome.job):
        return False
    try:
        job_store.record_carried(outcome, delivery.message_id, single_attempt=True)
    except _AWS_ERRORS as error:
        if is_outage(error):
            _store_failed()
        return False  # the message carries it (a store that refuses it now refuses it there, with the DLQ)
    return True


def _deliver_outcome(outcome: OutcomeMessage, delivery: Delivery) -> Outcome:
    """Record an outcome that an unclaimed attempt sent; a `failed` one then runs the job's retry, claimed."""
    if time.monotonic() < _store_down_until:
        raise delivery.hand_back("the store failed moments ago: not recording now")
    if outcome.status is Status.FAILED and delivery.seconds_left < deadline.seconds_needed_to_start(outcome.job):
        raise delivery.hand_back("too little of the invocation left to start this job within its timeout")
    if not _give_back_unit(outcome.job):
        raise delivery.hand_back("store unavailable giving back a far-future job's unit")
    try:
        if outcome.attempt_token is not None:  # a claimed attempt's: recorded as that attempt's, if it still holds
            recorded = job_store.complete(
                outcome.job.id,
                outcome.attempt_token,
                outcome.result,
                outcome.finished_at,
                started=job_store.Started(outcome.started_at),
                single_attempt=True,
            )
        else:
            recorded = job_store.record_carried(outcome, delivery.message_id, single_attempt=True)
    except _AWS_ERRORS as error:
        if is_outage(error):
            _store_failed()
            raise delivery.hand_back(f"store unavailable recording a carried outcome: {error}") from error
        # The store refuses it (and would every time): the DLQ keeps the job, with the reason.
        reason = f"the store refused an outcome recorded late ({aws_error_code(error) or type(error).__name__})"
        queue.send_to_dlq(outcome.job.to_json(), reason)
        return Outcome.UNREADABLE
    if outcome.status is Status.FAILED:
        # The retry runs as the job's own message would: its DLQ entry is the job, redrivable as any.
        return work(outcome.job, replace(delivery, body=outcome.job.to_json()), first_run=False)
    return Outcome.RECORDED_LATE if recorded else Outcome.DUPLICATE


def _result_problem(result: object) -> str | None:
    """Why a result cannot be stored, if it cannot: the store holds at most MAX_RESULT_BYTES of it."""
    try:
        size = len(job_store.result_json(result).encode())
    except (ValueError, TypeError, RecursionError) as error:
        return f"the job's result cannot be serialised as JSON ({type(error).__name__}: {error})"
    if size > settings.MAX_RESULT_BYTES:
        return f"the job's result is {size} bytes serialised, over the limit of {settings.MAX_RESULT_BYTES} bytes"
    return None


def _run(message: JobMessage, delivery: Delivery, attempt: int, token: str, timeout: int, lease_end: float) -> Outcome:
    started_at = time.time()
    started = job_store.Started(started_at, first_attempt=attempt == 1)
    job_type = job_types.lookup(message.type)
    context = job_types.JobContext(
        job_id=message.id,
        attempt=attempt,
        max_attempts=message.max_attempts,
        deadline=time.time() + timeout,
        logger=job_logging.logger_for(message, attempt),
        tenant=message.tenant,
    )
    retry_after: float | None = None
    try:
        if job_type is None:
            raise job_types.JobFailed(f"unknown job type {message.type!r} on this worker")
        with deadline.time_limit(timeout):
            result = job_type.run(message.payload, context)
    except Exception as error:  # a job's failure is data, whatever it raised
        reason = str(error) if isinstance(error, job_types.JobTimedOut) else f"{type(error).__name__}: {error}"
        if isinstance(error, job_types.JobFailed):
            retry_after = error.retry_after
        if attempt >= message.max_attempts or isinstance(error, job_types.JobDead):
            queue.send_to_dlq(delivery.body, reason)  # DLQ first: a failure here leaves the job to retry
            job_store.record_dead(message, reason, time.time(), token=token, started=started)
            return Outcome.DEAD
        if job_store.record_failure(message.id, token, reason, time.time(), started=started):
            raise RetryLater(_retry_delay(job_type, attempt, retry_after), reason) from error
        return Outcome.LOST_CLAIM
    if (problem := _result_problem(result)) is not None:
        # Not retried: the same job would most likely return the same result again.
        queue.send_to_dlq(delivery.body, problem)
        job_store.record_dead(message, problem, time.time(), token=token, started=started)
        return Outcome.DEAD
    finished_at = time.time()

    def complete() -> None:
        try:
            job_store.complete(message.id, token, result, finished_at, started=started, single_attempt=True)
        except _AWS_ERRORS as error:
            if not is_outage(error):
                _outcome_not_written(error, message, delivery, token, lease_end)
                return
            _store_failed()
            # The job ran; rather than run it again when the lease ends, carry its outcome to a later delivery.
            carried = OutcomeMessage(
                message, Status.SUCCEEDED, started_at, finished_at, result=result, attempt_token=token
            )
            store_error = error

            def not_sent(reason: str) -> None:
                # Retried when the lease ends, as any attempt whose outcome was lost.
                _outcome_not_written(store_error, message, delivery, token, lease_end)

            _carry(_Carried(delivery, carried, OUTCOME_DELAY_SECONDS, not_sent))

    _after_the_job(delivery, complete)
    return Outcome.SUCCEEDED


def _retry_delay(job_type: job_types.JobType | None, attempt: int, retry_after: float | None) -> float:
    """The job's own Retry-After (capped by its type), else its type's backoff."""
    if job_type is None:
        return queue.backoff_seconds(attempt)
    if retry_after is not None:
        return max(0.0, min(retry_after, job_type.backoff_cap_seconds))
    return queue.backoff_seconds(attempt, base=job_type.backoff_base_seconds, cap=job_type.backoff_cap_seconds)
