"""A debounced job's message at the worker: its key's group decides, before any claim, whether it runs (its group
marked it as its run, or has no say: claimed as any job), waits (its group is not due yet: unclaimed, using no
attempt, as any waiting job), or was superseded by a later arrival (recorded `skipped`, its reason naming the job
that ran in its place, and acknowledged). See docs/decisions/debounce.md.

A schedule's run carries its schedule's debounce without an arrival number (Scheduler sends it, not the API): it
arrives in its group at its first delivery here, and is then judged as any debounced job.

While the store fails, a debounced job is handed back rather than run unclaimed: run without its group, a
superseded job would run beside the one that superseded it.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

from shared import settings
from shared.flow import debounce as rules
from shared.flow.debounce import Debounce, NotDue, Superseded
from shared.model.message import JobMessage
from shared.store.flow import debounce_items
from shared.worker.admit import store_gate, waiting
from shared.worker.batch import Batch
from shared.worker.delivery import Delivery
from shared.worker.verdicts import Verdict


def judge(message: JobMessage, delivery: Delivery, batch: Batch) -> Verdict | None:
    """None: the job is claimed as any job. Else what becomes of its delivery (it waits, or ends `skipped`)."""
    debounce = message.debounce
    if debounce is None:
        return None
    return store_gate.decided(
        delivery,
        batch,
        lambda: _decide(message, debounce, delivery),
        cannot="its debounce group cannot decide",
        doing="deciding its debounce",
    )


def _decide(message: JobMessage, debounce: Debounce, delivery: Delivery) -> Verdict | None:
    now = time.time()
    try:
        seq = message.debounce_seq
        if seq is None:
            return _arrive(message, delivery, now)
        decision = debounce_items.settle(message.tenant, debounce, message.id, seq, now)
        match decision:
            case NotDue(until=until):
                delay = min(math.ceil(until - now), settings.MAX_SQS_DELAY_SECONDS)
                why = f"debounce {debounce.key!r}: its group is due at {until:.0f}"
                shown = {"kind": "debounce", "key": debounce.key, "until": round(until, 3)}
                wait_for = waiting.WaitReason.DEBOUNCE
                return waiting.wait(message, delivery, wait_for, why, delay=max(delay, 1), shown=shown)
            case Superseded(by=by):
                reason = rules.skip_reason(debounce, by)
                if debounce_items.record_superseded(message, reason, by, now):
                    return store_gate.skipped(message)
                return None  # it has a record already: its claim answers what it is
    except debounce_items.DebounceContended as contended:
        return delivery.hand_back(str(contended))
    return None


def _arrive(message: JobMessage, delivery: Delivery, now: float) -> Verdict:
    """A schedule's run, put on the queue by Scheduler without an arrival number: it arrives in its key's group
    here, and its message is sent again with its number, delayed until its group is due, as the API sends a debounced
    job (this one acknowledged). If that send fails, this message comes back and arrives again: where nothing
    arrived since, it is found recorded already; else it arrives anew, the group's latest, and its group still runs
    once, every other run skipped naming it."""
    assert message.debounce is not None
    arrived = debounce_items.arrive(message.tenant, message.debounce, message.id, now, single_attempt=True)
    numbered = replace(message, debounce_seq=arrived.seq)
    why = f"debounce {message.debounce.key!r}: arrived in its group, due in {arrived.delay_seconds} s"
    shown = {"kind": "debounce", "key": message.debounce.key, "until": round(now + arrived.delay_seconds, 3)}
    delay = max(1, min(arrived.delay_seconds, settings.MAX_SQS_DELAY_SECONDS))
    wait = waiting.wait(numbered, delivery, waiting.WaitReason.DEBOUNCE, why, delay=delay, shown=shown)
    return replace(wait, resend=True)
