"""How much of the account's Lambda concurrency and API Gateway rate one deployment (a stage) takes.

Stages share the Region's account quotas: Lambda concurrency (1,000 by default, of which Lambda keeps
100 unreserved) and API Gateway's 10,000 requests/s. Each stage takes a share, set at deploy with
CDK context (docs/deploy.md "Quotas" has a table for one, two and three stages):

    -c corral:account_concurrency=1000   the Region's quota (after a raise, say so here)
    -c corral:concurrency=900            the Lambda concurrency the stage's functions may take at most
                                         (default: the quota less the 100 Lambda keeps unreserved)
    -c corral:api_reserved_concurrency=400
    -c corral:worker_max_pollers=49      (default: what the share leaves the worker)
    -c corral:worker_min_pollers=21      (default: settings.WORKER_MIN_POLLERS, at most the maximum)
    -c corral:api_throttle_rate=8000 -c corral:api_throttle_burst=4000

The worker is bounded by its pollers (each drives up to 10 concurrent invokes) and the backstop's event
source (settings.BACKSTOP_MAX_CONCURRENCY), not by a reservation.
When the stack runs a customer's jobs package, the jobs function gets a reservation of its own: the
share less the API's reservation and the worker's most. By default the worker gets a tenth of that
remainder and the jobs function the rest, because each worker invocation runs its batch's ten jobs at
once, and each customer job among them holds an execution of the jobs function: a throttled invoke of
the jobs function is a failed attempt. So API + worker + jobs function <= the share, always
(docs/decisions/capacity.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from shared import settings

# An SQS event source in provisioned mode has at least 2 pollers, minimum and maximum alike (Lambda's API).
LEAST_POLLERS = 2
# Each worker invocation runs its batch's jobs at once (shared/worker/producer.py): up to a batch's worth
# of jobs-function executions per worker execution.
JOBS_INVOKES_PER_WORKER = settings.WORKER_BATCH_SIZE


class Context(Protocol):
    def try_get_context(self, key: str) -> object: ...


@dataclass(frozen=True)
class Capacity:
    """One stage's share of the account, and how its functions split it (aws profile)."""

    account_concurrency: int  # the Region's Lambda concurrency quota (for the account-wide alarm)
    concurrency: int  # API + worker + jobs function, at most
    api_reserved: int
    worker_max_pollers: int
    worker_min_pollers: int
    jobs_reserved: int | None  # None when no customer package is deployed
    throttle_rate: int
    throttle_burst: int

    @property
    def worker_most(self) -> int:
        """The worker's most concurrent executions: its pollers' invokes, and the backstop's event source's."""
        return self.worker_max_pollers * settings.INVOKES_PER_POLLER + settings.BACKSTOP_MAX_CONCURRENCY

    @property
    def total(self) -> int:
        return self.api_reserved + self.worker_most + (self.jobs_reserved or 0)

    @classmethod
    def from_context(cls, node: Context, *, runs_customer_code: bool) -> Capacity:
        account = _positive(node, "corral:account_concurrency", settings.ACCOUNT_CONCURRENCY)
        concurrency = _positive(node, "corral:concurrency", account - settings.LAMBDA_UNRESERVED_MINIMUM)
        api_reserved = _positive(node, "corral:api_reserved_concurrency", settings.API_RESERVED_CONCURRENCY)
        left = concurrency - api_reserved - settings.BACKSTOP_MAX_CONCURRENCY  # what the jobs queue's pollers may take
        share = 1 + JOBS_INVOKES_PER_WORKER if runs_customer_code else 1
        default_pollers = left // (settings.INVOKES_PER_POLLER * share)
        max_pollers = _positive(node, "corral:worker_max_pollers", default_pollers)
        min_pollers = _positive(node, "corral:worker_min_pollers", min(settings.WORKER_MIN_POLLERS, max_pollers))
        capacity = cls(
            account_concurrency=account,
            concurrency=concurrency,
            api_reserved=api_reserved,
            worker_max_pollers=max_pollers,
            worker_min_pollers=min_pollers,
            jobs_reserved=left - max_pollers * settings.INVOKES_PER_POLLER if runs_customer_code else None,
            throttle_rate=_positive(node, "corral:api_throttle_rate", settings.API_THROTTLE_RATE_PER_SECOND),
            throttle_burst=_positive(node, "corral:api_throttle_burst", settings.API_THROTTLE_BURST),
        )
        capacity._check()
        return capacity

    def _check(self) -> None:
        most = self.account_concurrency - settings.LAMBDA_UNRESERVED_MINIMUM
        if self.concurrency > most:
            raise SystemExit(
                f"corral:concurrency: {self.concurrency} is more than the account's {self.account_concurrency} "
                f"less the {settings.LAMBDA_UNRESERVED_MINIMUM} Lambda keeps unreserved ({most}); raise the "
                "quota and say so with -c corral:account_concurrency"
            )
        taken = f"the API's {self.api_reserved} + the worker's {self.worker_most} ({self.worker_max_pollers} pollers)"
        if self.worker_max_pollers < LEAST_POLLERS or self.worker_min_pollers < LEAST_POLLERS:
            least = (
                LEAST_POLLERS
                * settings.INVOKES_PER_POLLER
                * (1 if self.jobs_reserved is None else 1 + JOBS_INVOKES_PER_WORKER)
                + settings.BACKSTOP_MAX_CONCURRENCY
            )
            raise SystemExit(
                f"corral:concurrency: {self.concurrency} less the API's {self.api_reserved} leaves the worker "
                f"{self.worker_max_pollers} pollers; an SQS event source needs at least {LEAST_POLLERS} "
                f"(give the stage at least {self.api_reserved + least}, or reserve less for the API)"
            )
        if self.worker_min_pollers > self.worker_max_pollers:
            raise SystemExit(
                f"corral:worker_min_pollers: {self.worker_min_pollers} is more than the maximum, "
                f"{self.worker_max_pollers}"
            )
        if self.jobs_reserved is not None and self.jobs_reserved < 1:
            raise SystemExit(f"corral:concurrency: {taken} leave nothing of {self.concurrency} for the jobs function")
        if self.total > self.concurrency:
            raise SystemExit(f"corral:concurrency: {taken} are more than the stage's {self.concurrency}")
        if self.throttle_burst > self.throttle_rate:
            raise SystemExit(
                f"corral:api_throttle_burst: {self.throttle_burst} is more than the rate, {self.throttle_rate}"
            )


def _positive(node: Context, key: str, default: int) -> int:
    raw = node.try_get_context(key)
    if raw in (None, ""):
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise SystemExit(f"{key}: {raw!r} is not a whole number") from None
    if value < 1:
        raise SystemExit(f"{key}: {value} must be at least 1")
    return value
