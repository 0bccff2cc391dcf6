"""Outcome messages a batch carries: an outcome the store could not take, sent on the queue when the batch
ends (one SendMessageBatch), and the deliveries handed back after their record was answered (docs/decisions/
outcome-messages.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from botocore.exceptions import ParamValidationError

from shared.aws import queue
from shared.model.outcome import Outcome, OutcomeMessage
from shared.worker.breaker import AWS_ERRORS
from shared.worker.delivery import Delivery
from shared.worker.verdicts import HandBack

# What a delivery answers: acknowledged with its outcome, or handed back (its visibility set already).
Settled = Outcome | HandBack


@dataclass(frozen=True)
class LateHandBack:
    """A delivery handed back after its record was answered: its outcome write or outcome message failed."""

    delivery: Delivery
    hand_back: HandBack
    error: BaseException | None = None  # not a store outage: a fault of ours or of a dependency


@dataclass(frozen=True)
class Carried:
    """An outcome message to send for `delivery`; `if_not_sent(reason)` settles the delivery then."""

    delivery: Delivery
    outcome: OutcomeMessage
    delay_seconds: int
    if_not_sent: Callable[[str], Settled]


def send_all(carried: list[Carried]) -> list[LateHandBack]:
    """Send a batch's outcome messages together: the deliveries whose message was not sent, to hand back."""
    if not carried:
        return []
    try:
        reasons = queue.send_outcomes([(each.outcome, each.delay_seconds) for each in carried])
    except (*AWS_ERRORS, ParamValidationError) as error:
        reasons = [str(error)] * len(carried)
    late: list[LateHandBack] = []
    for each, reason in zip(carried, reasons, strict=True):
        if reason is None:
            continue
        try:
            settled = each.if_not_sent(reason)
        except Exception as error:
            late.append(unexpected(each.delivery, error))
            continue
        if isinstance(settled, HandBack):
            late.append(LateHandBack(each.delivery, settled))
    return late


def unexpected(delivery: Delivery, error: BaseException) -> LateHandBack:
    """Not a job's failure: a fault of ours or of a dependency. The message comes back soon, later each
    time, and reaches the DLQ after the queue's receive budget, instead of staying hidden for the whole
    batch's visibility (job timeouts, up to minutes)."""
    return LateHandBack(delivery, delivery.hand_back(f"outcome write failed: {error!r}"), error)
