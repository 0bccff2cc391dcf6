"""One attempt of a job run in the jobs function, with its durable steps (docs/decisions/durable-jobs.md "One
attempt: the protocol through the fence"): invoke, check what the run did (shared/durable/protocol.py), record
its one new step in the journal, take the boundary it stopped at, and invoke again, until the run returns,
fails, or stops at a sleep or a wait (a `Suspension`).

The worker records every step: the jobs function sees the steps it replays and answers at most one new one.
A plain job (its code calls no durable method) costs what it always did: no journal read (its record keeps
none), one invoke, and its answer read as ever. The journal is written here, between invokes, because the
next invoke needs the step recorded; the job's record stays the completer's (shared/worker/complete/completer.py).

Suspending, in order: the step recorded `waiting` in the journal, the wait registered where its resolution
finds it (an event's index, a token's waiter) with a look back, the timer sent; then the completer records
the job `waiting` and reads the step once more (a resolution between the two is seen there).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from shared import environment
from shared.durable import protocol, steps, tokens
from shared.durable.steps import StepKind, StepStatus
from shared.errors import QuotaExceeded
from shared.execution.fenced_job import Answer
from shared.jobs.registry import JobContext
from shared.model.message import JobMessage
from shared.store.durable import event_items, journal_items, token_items
from shared.store.durable.token_items import TokenState
from shared.store.id_secret import id_secret
from shared.store.jobs import waiting_jobs
from shared.waits import quota as waiting_quota
from shared.worker.run import children, fence, wake_timer


@dataclass(frozen=True)
class Suspension:
    """The run stopped at `step`, a sleep or a wait: the job waits for `waiting_for` until `resume_at` (its
    timer is sent; None: only a resolution resumes it)."""

    step: str
    waiting_for: dict[str, Any]
    resume_at: float | None


@dataclass(frozen=True)
class Claim:
    """What the attempt's claim knows of the job: its token, its run, and whether its record keeps a journal."""

    token: str
    run: int
    journal: bool


def run(job_type: str, message: JobMessage, context: JobContext, claim: Claim) -> Answer | Suspension:
    """Run the attempt to its end: the job's answer (a result or a failure), or where it suspended."""
    if claim.journal:  # it may have waited: it waits no more (a no-op for a job that held no unit)
        waiting_quota.release(message.tenant, message.id)
    journal = _journal_at_claim(message, claim.run) if claim.journal else None
    while True:
        sent = journal.replayed(claim.run, token_url=_token_url(message.tenant)) if journal is not None else []
        answer = fence.run(job_type, message.payload, context, steps=sent)
        if journal is None and not answer.steps and answer.suspend is None and answer.failed_step is None:
            return answer  # a plain job's answer, or one whose code failed before any step
        try:
            progress = protocol.read(
                answer.steps, answer.suspend, answer.failed_step, journal.steps if journal is not None else {}
            )
        except protocol.Unreadable as error:
            return Answer(failure=f"JobFailed: the jobs function's answer is not one the worker reads: {error}")
        if journal is None:
            if not waiting_jobs.mark_journal(message.id, claim.token):
                return Answer(failure="JobFailed: the attempt lost its claim before recording a step")
            journal = journal_items.Journal(message.id, message.tenant)
        taken = _take(progress, answer, journal, message, claim)
        if taken is not None:
            return taken


def _take(
    progress: protocol.Progress, answer: Answer, journal: journal_items.Journal, message: JobMessage, claim: Claim
) -> Answer | Suspension | None:
    """Record what one invoke did and take its boundary: the attempt's end, or None to invoke again."""
    now = time.time()
    if progress.new is not None:
        written = journal_items.record(journal, progress.new.id, progress.new.change(), run=claim.run, now=now)
        if isinstance(written, journal_items.TooMuch):
            return Answer(failure=f"StepResultTooLarge: {written.reason}", dead=True)
    match progress.boundary:
        case None:
            if answer.failure is not None and progress.failed_step is not None:
                found = journal.steps.get(progress.failed_step)
                kind = found.kind if found is not None else StepKind.STEP
                journal_items.record(
                    journal, progress.failed_step, steps.Failed(kind, answer.failure), run=claim.run, now=now
                )
            return answer
        case protocol.Continue():
            return None
        case protocol.CreateToken(step=step_id, timeout_seconds=timeout):
            token_id = tokens.mint_id()
            token_items.create(token_id, message.tenant, message.id, step_id, now + timeout, now)
            change = steps.Ran(StepKind.CREATE_TOKEN, result_json=json.dumps({"id": token_id}))
            journal_items.record(journal, step_id, change, run=claim.run, now=now)
            return None
        case protocol.RunJob() | protocol.RunJobs():
            return _run_children(progress.boundary, journal, message, claim, now)
        case boundary:
            return _suspend(boundary, journal, message, claim, now)


def _run_children(
    boundary: protocol.RunJob | protocol.RunJobs,
    journal: journal_items.Journal,
    message: JobMessage,
    claim: Claim,
    now: float,
) -> Suspension | Answer | None:
    """Check the step's children, record the step waiting for them, then send them (a child that ends at once
    finds the step waiting): the suspension, or None when they ended meanwhile (the run goes on)."""
    step_id = boundary.step
    if isinstance(boundary, protocol.RunJob):
        kind, specs = StepKind.RUN_JOB, [boundary.job]
    else:
        kind, specs = StepKind.RUN_JOBS, list(boundary.jobs)
    try:
        found = children.prepared(kind, step_id, specs, message, claim.run, now)
    except children.InvalidChild as error:
        return Answer(failure=f"DurableMisuse: {error}", dead=True)
    change = steps.Suspended(kind, None, found.awaits, found.waiting_for)
    written = journal_items.record(journal, step_id, change, run=claim.run, now=now)
    if isinstance(written, journal_items.TooMuch):
        return Answer(failure=f"DurableMisuse: {written.reason}", dead=True)
    record = journal.steps[step_id]
    if record.status is not StepStatus.WAITING:
        return None  # its children ended already (an earlier delivery sent them): the run goes on
    if (refused := _hold_unit(message, None, now)) is not None:
        return refused  # nothing sent: the next attempt finds the step waiting, and sends them if it may
    unsent = children.send(found, now)
    if unsent:
        why = f"{len(unsent)} of step {step_id!r}'s {len(specs)} children could not be sent ({unsent[0]})"
        return Answer(failure=f"JobFailed: {why}; the next attempt sends them, the same jobs")
    return Suspension(step_id, record.wait or found.waiting_for, None)


def _hold_unit(message: JobMessage, resume_at: float | None, now: float) -> Answer | None:
    """Take the job's unit of `max_waiting_jobs` for a wait that counts (shared/waits/quota.py): None once held,
    else the attempt's failure naming the quota (retried after its backoff, dead after its last attempt)."""
    if not waiting_quota.counts(resume_at, now):
        return None
    try:
        waiting_quota.hold(message.tenant, message.id)
    except QuotaExceeded as error:
        return Answer(failure=f"QuotaExceeded: {error}; the job waits for nothing until it is retried")
    return None


def _suspend(
    boundary: protocol.Sleep | protocol.WaitForEvent | protocol.WaitForToken,
    journal: journal_items.Journal,
    message: JobMessage,
    claim: Claim,
    now: float,
) -> Suspension | Answer | None:
    """Record the step waiting, register it, send its timer: the suspension, or None when it resolved at once
    (the run goes on), or the job's failure."""
    step_id = boundary.step
    known = journal.steps.get(step_id)
    again = known if known is not None and known.status is StepStatus.WAITING and known.run == claim.run else None
    match boundary:
        case protocol.Sleep():
            until = again.until if again else boundary.ends_at(now)
            change = steps.Suspended(StepKind.SLEEP, until, "sleep", {"kind": "sleep", "step": step_id, "until": until})
        case protocol.WaitForEvent():
            if again is not None and again.wait is not None:
                until, wait = again.until, again.wait
            else:
                until = now + (boundary.timeout_seconds or 0)
                wait = {"kind": "event", "step": step_id, "name": boundary.name, "match": boundary.match or {}}
                wait["timeout_at"] = until
            change = steps.Suspended(StepKind.WAIT_FOR_EVENT, until, "event", wait)
        case protocol.WaitForToken(token=token_id):
            token = token_items.wait(token_id, message.id, step_id, claim.run)
            if token is None or token.job_id != message.id or token.tenant != message.tenant:
                return Answer(failure=f"DurableMisuse: step {step_id!r}: no token {token_id} of this job", dead=True)
            wait = {"kind": "token", "step": step_id, "token": token_id, "timeout_at": token.expires}
            change = steps.Suspended(StepKind.WAIT_FOR_TOKEN, token.expires, f"token:{token_id}", wait)
    written = journal_items.record(journal, step_id, change, run=claim.run, now=now)
    if isinstance(written, journal_items.TooMuch):
        return Answer(failure=f"DurableMisuse: {written.reason}", dead=True)
    record = journal.steps[step_id]
    if record.status is not StepStatus.WAITING:
        return None  # resolved meanwhile: the run goes on
    if (refused := _hold_unit(message, record.until, now)) is not None:
        return refused
    if _resolved_at_once(boundary, record, journal, message, claim, now):
        if waiting_quota.counts(record.until, now):
            waiting_quota.release(message.tenant, message.id)
        fresh = journal_items.read(message.id)
        if fresh is not None:
            journal.steps, journal.item_bytes, journal.result_bytes = fresh.steps, fresh.item_bytes, fresh.result_bytes
        return None
    if record.until is not None:
        wake_timer.send(message, record.until, wake_timer.schedule_name(message.id, record.n, record.attempts))
    return Suspension(step_id, record.wait or {"kind": steps.WAITING_FOR[record.kind], "step": step_id}, record.until)


def _resolved_at_once(
    boundary: protocol.Sleep | protocol.WaitForEvent | protocol.WaitForToken,
    record: steps.StepRecord,
    journal: journal_items.Journal,
    message: JobMessage,
    claim: Claim,
    now: float,
) -> bool:
    """Whether the step resolved as it was registered: a sleep already over, an event sent since the wait's
    window opened (the look back), a token completed before the wait."""
    change: steps.Resolved | steps.TimedOut | None = None
    if record.kind is StepKind.SLEEP:
        if record.until is not None and record.until <= now:
            change = steps.TimedOut(StepKind.SLEEP)
    elif record.kind is StepKind.WAIT_FOR_EVENT and record.wait is not None:
        name = str(record.wait["name"])
        waiter = event_items.Waiter(
            message.id, record.id, dict(record.wait.get("match") or {}), _window(journal, record, message), claim.run
        )
        found = event_items.register(message.tenant, name, waiter, now)
        if found:
            event_items.unregister(message.tenant, name, waiter)
            first = found[0]
            change = steps.Resolved("event", by=first.event_id, result_json=json.dumps(first.data))
    elif record.kind is StepKind.WAIT_FOR_TOKEN and isinstance(boundary, protocol.WaitForToken):
        token = token_items.get(boundary.token)
        if token is not None and token.state is TokenState.COMPLETED:
            change = steps.Resolved(f"token:{boundary.token}", by="token", result_json=json.dumps(token.data))
    if change is None:
        return False
    resolved = journal_items.resolve(message.id, message.tenant, record.id, change, now=now)
    return isinstance(resolved, steps.Applied | steps.AlreadyDone)


def _window(journal: journal_items.Journal, record: steps.StepRecord, message: JobMessage) -> float:
    """Since when an event resumes the wait: when the step before it started (a step) or ended (a sleep or a
    wait), else the job's enqueue (docs/decisions/durable-jobs.md "The race")."""
    before = [each for each in journal.ordered() if each.n < record.n]
    if not before:
        return message.enqueued_at
    previous = before[-1]
    if previous.kind is StepKind.STEP:
        return previous.started_at or message.enqueued_at
    return previous.finished_at or previous.started_at or message.enqueued_at


def _journal_at_claim(message: JobMessage, run: int) -> journal_items.Journal:
    """The journal as the attempt begins: a step whose timer has come (a sleep's end, a wait's timeout) is
    resolved first, unless something resolved it before."""
    journal = journal_items.read(message.id) or journal_items.Journal(message.id, message.tenant)
    waiting = journal.waiting()
    now = time.time()
    if waiting is not None and waiting.until is not None and waiting.until <= now:
        journal_items.resolve(message.id, message.tenant, waiting.id, steps.TimedOut(waiting.kind), now=now)
        journal = journal_items.read(message.id) or journal
    return journal


def _token_url(tenant: str) -> Any:
    api_url = environment.current().api_url

    def url(token_id: str) -> str:
        return tokens.url(api_url, id_secret(), tenant, token_id)

    return url
