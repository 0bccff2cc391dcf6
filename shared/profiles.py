"""Deploy profiles: the knobs that differ between AWS and the embedded emulator (`-c corral:profile=aws|local`).
Every other name and number is in shared/settings.py."""

from __future__ import annotations

from dataclasses import dataclass, replace

from shared.settings import (
    API_KEY_CACHE_SECONDS,
    MAX_JOB_TIMEOUT_SECONDS,
    MAX_RECEIVE_COUNT,
    MAX_SQS_DELAY_SECONDS,
    MIN_RECEIVE_BUDGET,
    QUEUE_VISIBILITY_MARGIN_SECONDS,
    RETRY_BACKOFF_CAP_SECONDS,
    WAIT_RESEND_AT_RECEIVE,
    WAKE_SCHEDULER_THRESHOLD_SECONDS,
    WORKER_BATCHING_WINDOW_SECONDS,
)


@dataclass(frozen=True)
class Profile:
    """Deploy-time knobs that differ between AWS and the embedded emulator."""

    name: str
    worker_timeout_seconds: int
    dax: bool  # DAX cluster + VPC; the emulator has neither
    # What AWS has and the emulator does not need: the table's warm throughput and deletion protection,
    # stack termination protection, the API's reserved concurrency.
    production: bool = False
    provisioned_pollers: bool = False  # ESM provisioned mode (AWS), else MaximumConcurrency (all the emulator has)
    api_key_cache_seconds: int = API_KEY_CACHE_SECONDS  # the revocation bound
    # HTTP jobs may call loopback (127.0.0.1, ::1) and plain http: the local profile, so tests run real servers.
    http_loopback_targets: bool = False
    plain_http_targets: bool = False
    # The longest attempt a worker runs (a job's timeout is capped to it). A job starts only with its
    # timeout + JOB_START_RESERVE_SECONDS left of the invocation; a fresh invocation must fit any job,
    # with a few seconds for the batch's visibility call and the claim before it.
    job_timeout_ceiling_seconds: int = MAX_JOB_TIMEOUT_SECONDS - 5
    # The jobs queue's maxReceiveCount (its receive budget), and the receive of a message at which a
    # waiting job is sent again as a fresh one instead of handed back (docs/decisions/waiting-keeps-its-place.md).
    receive_budget: int = MAX_RECEIVE_COUNT
    wait_resend_at: int = WAIT_RESEND_AT_RECEIVE
    # A durable job's sleep or timeout due beyond this wakes through a one-time Scheduler schedule, else an
    # SQS delay (docs/decisions/durable-jobs.md "Sleeps and timeouts").
    wake_scheduler_threshold_seconds: int = WAKE_SCHEDULER_THRESHOLD_SECONDS

    def __post_init__(self) -> None:
        if not 1 < self.wait_resend_at < self.receive_budget:
            raise ValueError(f"profile {self.name}: wait_resend_at must be between 1 and the receive budget")

    def with_receive_budget(self, budget: int) -> Profile:
        """This profile with another receive budget (`-c corral:receive_budget=N`): a waiting job is sent again
        once its message has been received 60 % of the budget, leaving the rest for hand-backs of other kinds.
        The end-to-end suite lowers it so a test waits past it in a couple of minutes."""
        if budget < MIN_RECEIVE_BUDGET:
            raise ValueError(f"the receive budget must be at least {MIN_RECEIVE_BUDGET}")
        resend_at = WAIT_RESEND_AT_RECEIVE if budget == MAX_RECEIVE_COUNT else max(2, round(budget * 0.6))
        return replace(self, receive_budget=budget, wait_resend_at=resend_at)

    @property
    def visibility_timeout_seconds(self) -> int:
        # SQS event sources need >= the function timeout. Not AWS's suggested 6x: the worker hides each
        # received message for about its own job's timeout (shared/worker/run/cover.py), so this applies only to
        # messages it never reached (an environment that died starting), and 6 x 900 s would hold those 90 min.
        return self.worker_timeout_seconds + QUEUE_VISIBILITY_MARGIN_SECONDS + WORKER_BATCHING_WINDOW_SECONDS

    @property
    def lease_seconds(self) -> int:
        # A claim outlives the invocation that made it, and expires before the
        # message comes back (visibility timeout), so a crashed attempt is taken over.
        return self.worker_timeout_seconds + 5

    @property
    def http_timeout_seconds(self) -> int:
        # An HTTP job's request may last its whole attempt (the job's own timeout stops it in any case).
        return self.job_timeout_ceiling_seconds

    @property
    def oldest_message_age_alarm_seconds(self) -> int:
        """The oldest a healthy message gets while SQS still counts it in ApproximateAgeOfOldestMessage,
        which leaves out a message after its third receive: a delay (15 min), three attempts of the
        longest job, the two backoffs between them (15 min each), and 10 minutes more. Any older, and
        a message has waited with nobody receiving it. See docs/decisions/alarms.md."""
        attempts_counted = 3
        return (
            MAX_SQS_DELAY_SECONDS
            + attempts_counted * self.job_timeout_ceiling_seconds
            + (attempts_counted - 1) * RETRY_BACKOFF_CAP_SECONDS
            + 600
        )


PROFILES = {
    # Lambda's longest invocation, so any job up to 15 minutes runs; short jobs still come back
    # within about their own timeout when a worker dies (docs/decisions/batch-cover.md).
    "aws": Profile(name="aws", worker_timeout_seconds=900, dax=True, provisioned_pollers=True, production=True),
    # Short timeouts so crash-recovery tests wait seconds, not minutes (attempts here run at most 5 s).
    # 10 s leaves a batch 5 s beyond one 5 s attempt before later jobs are handed back.
    "local": Profile(
        name="local",
        worker_timeout_seconds=10,
        dax=False,
        provisioned_pollers=False,
        job_timeout_ceiling_seconds=5,
        api_key_cache_seconds=5,  # so the revocation test waits seconds
        wake_scheduler_threshold_seconds=20,  # so a test sleeps past it in half a minute
        http_loopback_targets=True,
        plain_http_targets=True,
    ),
}
