"""A throttle's turns: at most `limit` of a tenant's jobs with one throttle key start in any window of
`period_seconds`, fleet-wide (shared/flow/throttle.py, docs/decisions/throttle.md).

As a batch begins, its jobs within their tenant's cap that have a throttle take their **turns** from the key's
start log (shared/store/flow/throttle_items.py), one read and one conditional write per key, in enqueue order. A job
whose turn is now, or within THROTTLE_WAIT_IN_BATCH_SECONDS, waits for it in its batch and starts; one whose turn is
later waits unclaimed (shared/worker/admit/waiting.py), sent again as a fresh message that carries its turn and
arrives a little before it, so it keeps its place: no attempt used, no receive budget spent. A job that reaches its
turn too late to start by the turn's `start_by` takes another. The throttle fails closed: while its log cannot be
read or written, its jobs wait, never start uncounted.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from datetime import UTC, datetime
from typing import Any

from shared.flow import limits
from shared.flow.flow_key import KeyUnreadable, key_of_payload
from shared.flow.throttle import Throttle, Turn
from shared.jobs import job_types
from shared.model.message import JobMessage
from shared.store.flow import throttle_items
from shared.worker.admit import waiting
from shared.worker.breaker import AWS_ERRORS, StoreBreaker, is_outage, is_throttle
from shared.worker.delivery import Delivery
from shared.worker.run import cover
from shared.worker.verdicts import Unreadable, Wait


def throttle_of(message: JobMessage) -> Throttle | None:
    """The throttle the job starts under: its own, else its type's (the key read from the payload field the type
    names); None without one. KeyUnreadable if the payload has no usable value there."""
    if message.throttle is not None:
        return message.throttle
    found = job_types.lookup(message.type)
    declared = (found.flow or {}).get("throttle") if found is not None else None
    if declared is None:
        return None
    default = Throttle.parse(declared)
    return dataclasses.replace(default, key=key_of_payload(message.payload, default.key))


class ThrottleTurns:
    """The turns a batch's throttled jobs took as it began, by SQS message id."""

    def __init__(self, takers: Executor, breaker: StoreBreaker, jobs: Sequence[tuple[Delivery, JobMessage]]) -> None:
        self._breaker = breaker
        self._began = now = time.time()
        self._turns: dict[str, Turn] = {}
        self._unreadable: dict[str, str] = {}  # by message id: why its type's throttle key cannot be read
        self._throttled: set[str] = set()  # message ids of the jobs with a throttle
        groups: dict[tuple[str, Throttle], list[tuple[Delivery, JobMessage]]] = {}
        for delivery, message in jobs:
            try:
                throttle = throttle_of(message)
            except KeyUnreadable as unreadable:
                self._unreadable[delivery.message_id] = str(unreadable)
                continue
            if throttle is None:
                continue
            self._throttled.add(delivery.message_id)
            carried = carried_turn(delivery)
            if carried is not None and now <= carried.start_by:
                self._turns[delivery.message_id] = carried  # its turn, kept while it waited
                continue
            groups.setdefault((message.tenant, throttle), []).append((delivery, message))
        taking: dict[tuple[str, Throttle], Future[list[Turn]]] = {}
        for (tenant, throttle), members in groups.items():
            members.sort(key=lambda member: member[1].enqueued_at)  # turns in enqueue order, as far as SQS allows
            taking[(tenant, throttle)] = takers.submit(throttle_items.take_turns, tenant, throttle, len(members), now)
        for group, taken in taking.items():
            try:
                turns = taken.result()
            except AWS_ERRORS as error:
                if is_outage(error) and not is_throttle(error):
                    breaker.failed()
                continue  # fails closed: its jobs find no turn and wait
            except throttle_items.ThrottleContended:
                continue
            for (delivery, _), turn in zip(groups[group], turns, strict=True):
                self._turns[delivery.message_id] = turn

    def starts_now(self, delivery: Delivery) -> bool:
        """Whether the job's throttle lets it start as the batch begins (so it may be claimed ahead)."""
        if delivery.message_id in self._unreadable:
            return False
        if delivery.message_id not in self._throttled:
            return True
        turn = self._turns.get(delivery.message_id)
        return turn is not None and turn.at <= time.time() <= turn.start_by

    def admit(self, message: JobMessage, delivery: Delivery) -> Wait | Unreadable | None:
        """None: the job may start now (after waiting in its batch for its turn, if it is near). Else why not: it
        waits for its turn (carrying it), or its throttle's key cannot be read."""
        try:
            throttle = throttle_of(message)
        except KeyUnreadable as unreadable:
            return Unreadable(f"its throttle key cannot be read: {unreadable}", message.to_dict())
        if throttle is None:
            return None
        turn = self._turns.get(delivery.message_id) or self._take_one(message.tenant, throttle)
        if turn is None:
            return _throttle_wait(message, delivery, throttle, None, "store unavailable counting its throttle")
        self._turns[delivery.message_id] = turn
        now = time.time()
        latest_start = min(
            self._began + limits.THROTTLE_WAIT_IN_BATCH_SECONDS,
            now + delivery.seconds_left - cover.seconds_needed_to_start(message),
        )
        if turn.at > latest_start:
            return _throttle_wait(message, delivery, throttle, turn, f"throttle {throttle.key!r}: its turn is later")
        if turn.at > now:
            time.sleep(turn.at - now)
        if time.time() > turn.start_by:
            # Too late for its turn (it waited in the batch for something else): it takes another.
            return _throttle_wait(message, delivery, throttle, None, f"throttle {throttle.key!r}: it missed its turn")
        return None

    def _take_one(self, tenant: str, throttle: Throttle) -> Turn | None:
        """A turn for a job that took none as the batch began (a retry its failed attempt's outcome carried, or one
        whose log could not be counted then); None while the store fails or the breaker cools."""
        if self._breaker.cooling:
            return None
        try:
            return throttle_items.take_turns(tenant, throttle, 1, time.time())[0]
        except AWS_ERRORS as error:
            if is_outage(error) and not is_throttle(error):
                self._breaker.failed()
        except throttle_items.ThrottleContended:
            pass
        return None

    def missed(self, message: JobMessage, delivery: Delivery) -> Wait:
        """The job waited in its batch for its concurrency key past its turn: it waits, and takes another."""
        throttle = throttle_of(message)
        assert throttle is not None  # only a job with a turn misses it
        return _throttle_wait(message, delivery, throttle, None, f"throttle {throttle.key!r}: it missed its turn")

    def on_time(self, delivery: Delivery) -> bool:
        """Whether the job, having waited in its batch for its concurrency key too, still starts by its turn's
        `start_by` (True for a job without a turn)."""
        turn = self._turns.get(delivery.message_id)
        return turn is None or time.time() <= turn.start_by


def carried_turn(delivery: Delivery) -> Turn | None:
    """The turn the delivery's job took before it waited (its wait attribute carries it), if any."""
    waited = delivery.waited
    return None if waited is None or waited.turn is None else Turn(*waited.turn)


def _throttle_wait(message: JobMessage, delivery: Delivery, throttle: Throttle, turn: Turn | None, why: str) -> Wait:
    """The job waits for its turn: sent again to arrive THROTTLE_ARRIVE_EARLY_SECONDS before it, carrying it. Without
    a turn (its log could not be counted, or it missed its turn) it comes back soon and takes one."""
    shown: dict[str, Any] = {"kind": "throttle", "key": throttle.key}
    if turn is None:
        unit = limits.THROTTLE_RETRY_UNIT_SECONDS
        return waiting.wait(message, delivery, waiting.WaitReason.THROTTLE, why, unit=unit, shown=shown)
    delay = max(0, math.floor(turn.at - time.time() - limits.THROTTLE_ARRIVE_EARLY_SECONDS))
    until = datetime.fromtimestamp(turn.at, UTC).isoformat(timespec="seconds")
    reason = f"{why}: {throttle.limit} starts per {throttle.period_seconds} s, its turn at {until}"
    shown["until"] = round(turn.at, 3)  # the turn it took as it first waited (a missed turn takes a later one)
    wait = waiting.wait(message, delivery, waiting.WaitReason.THROTTLE, reason, delay=delay, shown=shown)
    return dataclasses.replace(
        wait, resend=True, waited=dataclasses.replace(wait.waited, turn=(turn.at, turn.start_by))
    )
