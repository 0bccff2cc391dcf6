"""Business metrics as CloudWatch embedded-metric-format log lines (Powertools Metrics).

EMF costs no API call and no dependency beyond Powertools: CloudWatch Logs turns the
line each invocation prints into metrics in the `corral` namespace. Handlers decorate
with `metrics.log_metrics`; the helpers below name what is counted.
"""

from __future__ import annotations

import time

from aws_lambda_powertools import Metrics, single_metric
from aws_lambda_powertools.metrics import MetricUnit

from shared import settings
from shared.model.outcome import Outcome

metrics = Metrics(namespace=settings.METRICS_NAMESPACE)

_OUTCOMES = {
    Outcome.SUCCEEDED: "JobsSucceeded",
    Outcome.DEAD: "JobsDead",
    Outcome.DUPLICATE: "DuplicateDeliveries",
    Outcome.LOST_CLAIM: "LostClaims",
    Outcome.UNREADABLE: "UnreadableMessages",
    Outcome.RETRY_SENT: "RetriesSentUnclaimed",
    Outcome.RECORDED_LATE: "OutcomesRecordedLate",
    Outcome.RESENT: "WaitsResent",
    Outcome.DEAD_LETTERED: "BackstopDeadLetters",
}
# The dead letters of the platform's making, which page (the PlatformDeadLetters alarm, infra/alarms.py): a
# message that cannot run, and a job whose message reached the backstop with no outcome recorded. A
# tenant's job that used its attempts is `DeadLettersByTenant`, never a page.
_PLATFORM_DEAD_LETTERS = frozenset({Outcome.UNREADABLE, Outcome.DEAD_LETTERED})


def jobs_enqueued(count: int = 1) -> None:
    metrics.add_metric(name="JobsEnqueued", unit=MetricUnit.Count, value=count)


def job_outcome(outcome: Outcome) -> None:
    metrics.add_metric(name=_OUTCOMES.get(outcome, "JobsOtherOutcome"), unit=MetricUnit.Count, value=1)
    if outcome in _PLATFORM_DEAD_LETTERS:
        metrics.add_metric(name="PlatformDeadLetters", unit=MetricUnit.Count, value=1)


def job_retried() -> None:
    metrics.add_metric(name="JobsRetried", unit=MetricUnit.Count, value=1)


def job_started(enqueued_at: float) -> None:
    """Enqueue-to-start of a first delivery (includes any delay the job asked for)."""
    latency_ms = max(0.0, (time.time() - enqueued_at) * 1000)
    metrics.add_metric(name="EnqueueToStartLatency", unit=MetricUnit.Milliseconds, value=latency_ms)


# The hand-backs a store outage causes, by the reasons the worker gives them (shared/worker/receive.py,
# completer.py, unclaimed.py). A retry's backoff and a job too long for the invocation's time left are
# hand-backs too, but no sign of an outage.
STORE_OUTAGE_REASONS = ("store unavailable", "the store failed", "outcome write failed")


def handed_back(reason: str) -> None:
    """A delivery handed back: counted in JobsRetried, and in StoreHandBacks when the store failed."""
    job_retried()
    if reason.startswith(STORE_OUTAGE_REASONS):
        metrics.add_metric(name="StoreHandBacks", unit=MetricUnit.Count, value=1)


TENANT_DIMENSION = "tenant"
UNKNOWN_TENANT = "-"  # a message too broken to name its tenant


def dead_letter(tenant: str | None) -> None:
    """A message the worker put in the DLQ, counted per tenant (`DeadLettersByTenant`): a tenant's
    failing jobs are its own figure on the dashboard, never a page (docs/decisions/alarms.md).
    One line of its own: its dimension is not the invocation's."""
    with single_metric(
        name="DeadLettersByTenant", unit=MetricUnit.Count, value=1, namespace=settings.METRICS_NAMESPACE
    ) as metric:
        metric.add_dimension(name=TENANT_DIMENSION, value=tenant or UNKNOWN_TENANT)
