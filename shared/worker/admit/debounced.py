"""A debounced job's message at the worker: its key's group decides, before any claim, whether it runs (its group
marked it as its run, or has no say: claimed as any job), waits (its group is not due yet: unclaimed, using no
attempt, as any waiting job), or was superseded by a later arrival (recorded `skipped`, its reason naming the job
that ran in its place, and acknowledged). See docs/decisions/debounce.md.

While the store fails, a debounced job is handed back rather than run unclaimed: run without its group, a
superseded job would run beside the one that superseded it.
"""

from __future__ import annotations

import math
import time

from shared import settings
from shared.flow import debounce as rules
from shared.flow.debounce import NotDue, Superseded
from shared.model.message import JobMessage
from shared.store.flow import debounce_items
from shared.worker.admit import waiting
from shared.worker.batch import Batch
from shared.worker.breaker import AWS_ERRORS, is_outage
from shared.worker.delivery import Delivery
from shared.worker.verdicts import Duplicate, Verdict


def judge(message: JobMessage, delivery: Delivery, batch: Batch) -> Verdict | None:
    """None: the job is claimed as any job. Else what becomes of its delivery (it waits, or ends `skipped`)."""
    debounce, seq = message.debounce, message.debounce_seq
    if debounce is None or seq is None:
        return None
    if batch.breaker.cooling:
        return delivery.hand_back("the store failed moments ago: its debounce group cannot decide")
    now = time.time()
    try:
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
                    return Duplicate()
                return None  # it has a record already: its claim answers what it is
    except debounce_items.DebounceContended as contended:
        return delivery.hand_back(str(contended))
    except AWS_ERRORS as error:
        if not is_outage(error):
            raise
        batch.breaker.failed()
        return delivery.hand_back(f"store unavailable deciding its debounce: {error}")
    return None
