"""`max_waiting_jobs` (docs/decisions/durable-jobs.md "Limits and quotas"): a durable job that waits beyond SQS's
15-minute delay (a long sleep, an event or a token with a long timeout) or for children holds one unit of its
tenant's quota while it waits, so one tenant cannot park millions of jobs (and their wake schedules).

The unit is a hold item (`hold#wait#<job id>`), taken in one transaction with the tenant's counter and given
back in one transaction with its delete, as a far-future job's is (docs/decisions/quotas.md): a job holds at
most one (it waits in one step at a time), a take repeated finds it held and takes nothing, and of two
give-backs racing (a cancel and a claim) exactly one counts. The worker takes it before it records the step
waiting, and gives it back when an attempt of the job starts again, when a wait it took it for resolved at
once, and when the job is cancelled.
"""

from __future__ import annotations

import time

from shared import settings
from shared.store.tenants import counters
from shared.tenants import quotas


def counts(resume_at: float | None, now: float) -> bool:
    """Whether a wait until `resume_at` (None: only a resolution ends it, a child's end) holds a unit."""
    return resume_at is None or resume_at - now > settings.MAX_SQS_DELAY_SECONDS


def hold(tenant: str, job_id: str) -> bool:
    """Take the job's unit: False if it holds one already; QuotaExceeded (naming `max_waiting_jobs`) at the
    limit, with nothing taken."""
    return quotas.take(tenant, quotas.WAITING_JOBS, counters.wait_hold_item(tenant, job_id, time.time()))


def release(tenant: str, job_id: str, *, single_attempt: bool = False) -> bool:
    """Give the job's unit back: False if it held none."""
    return quotas.give_back(
        tenant, quotas.WAITING_JOBS, counters.wait_hold_item_key(job_id), single_attempt=single_attempt
    )
