"""Waiting one's turn: a job that cannot start yet for a flow-control reason (its tenant's running cap,
its concurrency key, its throttle, its debounce group not due yet) waits unclaimed, using no
attempt, and never spends the jobs queue's receive budget. `wait` is the one place that decides how a
waiting job's message waits; the completer applies what it decides (`Wait`).

Each wait is a hand-back (one receive of the message), its delay growing with every receive the job
has spent waiting, over all its messages, as any hand-back's does (docs/decisions/hand-backs.md). SQS
moves a message to the backstop after the queue's receive budget (`FunctionEnv.receive_budget`), so a
message received `FunctionEnv.wait_resend_at` times is instead sent again as a fresh message (its
receive count starting over) carrying its wait in an attribute, and acknowledged: a wait of days keeps
its job, its waiting state and its place in the fleet's order (its enqueue time), however long it lasts.
The receives between the two leave room for a send that fails (the message is handed back and tries
again) and for hand-backs of other kinds.

A send whose old message is not deleted after all (the event source's delete fails) leaves two messages
of one job: the claim runs the job once, and whichever message comes second finds it held or finished
and is acknowledged unrun (docs/decisions/waiting-keeps-its-place.md).
"""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any

from shared import environment
from shared.model.message import JobMessage
from shared.worker.delivery import Delivery, hand_back_seconds
from shared.worker.verdicts import Wait, Waited


class WaitReason(StrEnum):
    """What a job waits for: its message carries it, and a dead letter's reason names it."""

    RUNNING_CAP = "its tenant's running cap"
    CONCURRENCY_KEY = "its concurrency key"
    THROTTLE = "its throttle"
    DEBOUNCE = "its debounce group"


def receives_waited(delivery: Delivery) -> int:
    """The receives the delivery's job has spent waiting, this one included, over all its messages."""
    earlier = delivery.waited
    return (earlier.receives if earlier else 0) + delivery.receive_count


def delay_seconds(delivery: Delivery, unit: float | None = None) -> int:
    """How long the delivery's job waits this time: a hand-back's delay from `unit` (None: any hand-back's),
    by the receives it has waited."""
    return hand_back_seconds(receives_waited(delivery), unit=unit)


def wait(
    job: JobMessage,
    delivery: Delivery,
    why: WaitReason,
    reason: str,
    *,
    unit: float | None = None,
    delay: int | None = None,
    visibility_set: bool = False,
    shown: dict[str, Any] | None = None,
) -> Wait:
    """The job of `delivery` waits for `why` (`reason` says it in full): handed back, or sent again as a
    fresh message near the queue's receive budget. `delay`: decided already (as its batch began, when
    `visibility_set`), else from `unit` (`delay_seconds`). `shown`: what the job's view says it waits for, written to
    its record only when it first waits for `why` (one write per job and reason, not per hand-back)."""
    earlier = delivery.waited
    waited = Waited(since=earlier.since if earlier else time.time(), why=str(why), receives=receives_waited(delivery))
    return Wait(
        job=job,
        delay_seconds=delay_seconds(delivery, unit) if delay is None else delay,
        reason=reason,
        waited=waited,
        resend=delivery.receive_count >= environment.current().wait_resend_at,
        visibility_set=visibility_set,
        shown=shown if earlier is None or earlier.why != str(why) else None,
    )
