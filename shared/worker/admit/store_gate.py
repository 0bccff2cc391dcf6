"""What the admission gates that ask the store before a claim share (a debounce group: debounced.py; a schedule run's
unique key: unique_runs.py): while the store fails, the delivery is handed back, never run unclaimed, since without
its group or its lock it could run beside the job it defers to; and a job such a gate records `skipped` is
acknowledged once what its end sets off is done. `asked` is the store guard alone, also for the id secret's read
before any gate (shared/worker/receive.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from shared.batches import follow_ups
from shared.model.message import JobMessage
from shared.model.states import Status
from shared.worker.batch import Batch
from shared.worker.breaker import AWS_ERRORS, is_outage
from shared.worker.delivery import Delivery
from shared.worker.verdicts import Duplicate, Ended, HandBack, Verdict

Answer = TypeVar("Answer")


def asked(delivery: Delivery, batch: Batch, ask: Callable[[], Answer], *, doing: str) -> Answer | HandBack:
    """`ask()`'s answer, or, when the store fails at it (`doing`: "reading the id secret"), the delivery handed
    back and the process's store breaker tripped. An error that is no outage is raised."""
    try:
        return ask()
    except AWS_ERRORS as error:
        if not is_outage(error):
            raise
        batch.breaker.failed()
        return delivery.hand_back(f"store unavailable {doing}: {error}")


def decided(
    delivery: Delivery, batch: Batch, decide: Callable[[], Verdict | None], *, cannot: str, doing: str
) -> Verdict | None:
    """`decide()`'s verdict (None: the job is claimed as any job), or the delivery handed back while the store
    fails: `cannot` says what cannot happen then ("its debounce group cannot decide"), `doing` what the store failed
    at ("deciding its debounce"). An error that is no outage is raised."""
    if batch.breaker.cooling:
        return delivery.hand_back(f"the store failed moments ago: {cannot}")
    return asked(delivery, batch, decide, doing=doing)


def skipped(message: JobMessage) -> Duplicate:
    """The verdict of a job just recorded `skipped`: acknowledged, once what its end sets off is done (a batch's
    member is counted in its batch, which may complete)."""
    if follow_ups.has_follow_ups(message):
        return Duplicate(Ended(message, Status.SKIPPED))
    return Duplicate()
