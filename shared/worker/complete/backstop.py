"""The backstop: where SQS moves a jobs-queue message after the queue's receive budget (maxReceiveCount),
and where Scheduler sends a firing it could not deliver. Nothing is meant to arrive there: the worker
ends every job it can run itself, burying its message in the DLQ, and a waiting job never spends the
budget (shared/worker/admit/waiting.py). What does arrive is a platform fault (a message that kills its worker
before it answers, a delivery that fails the same way every time) or an operator's move by hand.

The worker drains it (an SQS event source on it, into the same function): each message's job is recorded
`dead` with the reason, what its end sets off is done (its batch's count, its `on_failure`), and the
message is buried in the DLQ with that reason, where operators look and redrive as for any dead job
(`corral dlq`). Then the event source deletes it from the backstop. A message that cannot be read is
buried with its reason too, and counted. Seen twice, a message records its job once.

The completer makes every write (`DeadLettered`; an outcome message's as any late outcome's).
"""

from __future__ import annotations

import time

from shared import environment
from shared.aws import queue
from shared.model.message import UnreadableMessage
from shared.model.outcome import OutcomeMessage, read_message
from shared.model.states import Status
from shared.worker.batch import Batch
from shared.worker.complete.completer import Settled
from shared.worker.delivery import Delivery
from shared.worker.receive import id_secret_for
from shared.worker.verdicts import DeadLettered, HandBack, LateOutcome, Unreadable, Verdict


def drains(event_source_arn: str | None) -> bool:
    """Whether records of this event source come from the backstop (its queue's name ends its ARN)."""
    return (event_source_arn or "").rsplit(":", 1)[-1] == environment.current().names.backstop


def handle(delivery: Delivery, batch: Batch) -> Settled:
    """Handle one delivery of a message in the backstop: what it answers, acknowledged or handed back."""
    return batch.completer.settle(verdict(delivery, batch), delivery)


def verdict(delivery: Delivery, batch: Batch) -> Verdict:
    """What to do with a message found in the backstop."""
    reason = reason_of(delivery)
    secret = id_secret_for(delivery, batch)
    if isinstance(secret, HandBack):
        return secret
    try:
        found = read_message(delivery.body, sent_at=delivery.sent_at, secret=secret)
    except UnreadableMessage as unreadable:
        return Unreadable(f"{reason}; it cannot run: {unreadable.reason}", unreadable.job)
    if isinstance(found, OutcomeMessage):
        if found.status is Status.SUCCEEDED:
            return LateOutcome(found)  # the job ran: its outcome is recorded, as any carried outcome's
        return DeadLettered(f"{reason}; its last attempt: {found.error or found.status}", found.job)
    return DeadLettered(reason, found)


def reason_of(delivery: Delivery) -> str:
    """Why the message is dead, as its attributes tell it, and how long its job had waited, if it waited."""
    said = queue.dead_letter_reason(delivery.attributes)
    if said is None:
        budget = environment.current().receive_budget
        said = f"reached the dead-letter queue with no outcome recorded (received {budget} times, or moved by hand)"
    waited = delivery.waited
    if waited is not None:
        said += f"; it had waited {time.time() - waited.since:.0f} s for {waited.why}"
    return said
