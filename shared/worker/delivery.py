"""One delivery of a queue message to this worker, as the handler received it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from shared.aws import queue
from shared.worker.verdicts import HandBack, Waited


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
    queue_url: str | None = None  # the queue it came from, if not the jobs queue (the backstop)

    @property
    def waited(self) -> Waited | None:
        """The wait its job carried here from earlier messages (shared/worker/waiting.py), if any."""
        return Waited.from_attribute(self.attributes.get(queue.WAITING_ATTRIBUTE))

    @property
    def first_receive(self) -> bool:
        """The job's first receive: not a hand-back's, nor a waiting job's sent again."""
        return self.receive_count == 1 and queue.WAITING_ATTRIBUTE not in self.attributes

    def hand_back(self, reason: str) -> HandBack:
        """Come back soon, later each time: every hand-back spends one receive of the queue's budget."""
        return HandBack(queue.hand_back_seconds(self.receive_count), reason)
