"""One delivery of a queue message to this worker, as the handler received it: how long it stays away
when it is handed back, and the job it may run (read once, as its batch begins)."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from shared import environment, settings
from shared.model.message import JobMessage, UnreadableMessage
from shared.model.outcome import OutcomeMessage, read_message
from shared.model.states import Status
from shared.worker.verdicts import WAITING_ATTRIBUTE, HandBack, Waited


@dataclass(frozen=True)
class Delivery:
    message_id: str
    body: str
    receive_count: int = 1  # SQS ApproximateReceiveCount: this is the n-th receive of the message
    sent_at: float = 0.0  # SQS SentTimestamp, epoch seconds
    seconds_left: float = math.inf  # of the invocation handling it
    # What hands the message back; None for a delivery made in process (not received from the queue).
    receipt_handle: str | None = None
    attributes: Mapping[str, str] = field(default_factory=dict)  # its message attributes' string values
    queue_url: str | None = None  # the queue it came from (a priority lane's, the backstop); None: the jobs queue

    @property
    def waited(self) -> Waited | None:
        """The wait its job carried here from earlier messages (shared/worker/admit/waiting.py), if any."""
        return Waited.from_attribute(self.attributes.get(WAITING_ATTRIBUTE))

    @property
    def first_receive(self) -> bool:
        """The job's first receive: not a hand-back's, nor a waiting job's sent again."""
        return self.receive_count == 1 and WAITING_ATTRIBUTE not in self.attributes

    def hand_back(self, reason: str) -> HandBack:
        """Come back soon, later each time: every hand-back spends one receive of the queue's budget."""
        return HandBack(hand_back_seconds(self.receive_count), reason)


# How long a hand-back stays away (docs/decisions/hand-backs.md) ------------------------------------------


def _hand_back_unit_seconds() -> float:
    return environment.current().hand_back_unit_seconds


def _hand_back_max_seconds() -> float:
    return environment.current().hand_back_max_seconds


def hand_back_floor_seconds(receive_count: int, unit: float | None = None, cap: float | None = None) -> float:
    """The least a delivery handed back without running stays away, after its `receive_count`-th receive.

    It doubles every HAND_BACK_DOUBLING_RECEIVES receives, up to the cap (the visibility timeout):
    each hand-back costs one receive of the queue's budget (maxReceiveCount), so the budget
    must be spent over hours of a store outage, not minutes.
    """
    unit = _hand_back_unit_seconds() if unit is None else unit
    cap = _hand_back_max_seconds() if cap is None else cap
    return min(cap, unit * 2 ** ((max(receive_count, 1) - 1) / settings.HAND_BACK_DOUBLING_RECEIVES))


def hand_back_seconds(receive_count: int, unit: float | None = None) -> int:
    """The delay of one hand-back: the floor, plus up to 20 % jitter (never less: the floor is what
    the outage arithmetic counts), in whole seconds as ChangeMessageVisibility takes them."""
    floor = hand_back_floor_seconds(receive_count, unit)
    return math.ceil(min(_hand_back_max_seconds(), floor * random.uniform(1.0, 1.2)))


# The job a delivery may run ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchJob:
    message: JobMessage
    carried: bool  # an outcome message carrying a failed attempt's retry, not a job message


def job_of(delivery: Delivery, secret: bytes) -> BatchJob | None:
    """The job a delivery may run: a job message whose id verifies, or the retry a failed attempt's outcome
    message carries; None for anything else (receive judges it: another outcome records in no time, an
    unreadable message goes to the DLQ having written nothing, running slots included)."""
    try:
        message = read_message(delivery.body, sent_at=delivery.sent_at, secret=secret)
    except UnreadableMessage:
        return None
    if isinstance(message, OutcomeMessage):
        return BatchJob(message.job, carried=True) if message.status is Status.FAILED else None
    return BatchJob(message, carried=False)
