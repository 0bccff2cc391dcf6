"""One delivery of a queue message to this worker, as the handler received it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from shared.aws import queue
from shared.worker.verdicts import HandBack


@dataclass(frozen=True)
class Delivery:
    message_id: str
    body: str
    receive_count: int = 1  # SQS ApproximateReceiveCount: this is the n-th receive of the message
    sent_at: float = 0.0  # SQS SentTimestamp, epoch seconds
    seconds_left: float = math.inf  # of the invocation handling it
    # What hands the message back; None for a delivery made in process (not received from the queue).
    receipt_handle: str | None = None

    def hand_back(self, reason: str) -> HandBack:
        """Come back soon, later each time: every hand-back spends one receive of the queue's budget."""
        return HandBack(queue.hand_back_seconds(self.receive_count), reason)
