"""Every resource name and tuning knob, in one place.

The CDK stack reads these to build resources; the functions read the same
values back from their environment (set by the stack), so a name or a timeout
is written exactly once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

STACK_NAME = "corral"

# Resource names (physical names, so tools and tests find them without lookups).
QUEUE_NAME = "corral-jobs"
DLQ_NAME = "corral-jobs-dlq"
TABLE_NAME = "corral-jobs"
SCHEDULE_GROUP = "corral"
API_NAME = "corral-api"
API_FUNCTION = "corral-api"
WORKER_FUNCTION = "corral-worker"

# Worker and queue tuning. See docs/architecture.md "Queue and worker numbers".
WORKER_BATCH_SIZE = 10
WORKER_BATCHING_WINDOW_SECONDS = 0  # latency first: enqueue-to-run p99 is an SLO
WORKER_MAX_CONCURRENCY = 50  # ESM MaximumConcurrency on AWS (2-1000)
# Throttled receives count toward maxReceiveCount; the app counts attempts itself and
# moves dead jobs to the DLQ, so this is only a backstop for messages that never reach
# our code (a worker that dies before claiming): high enough that a herd cannot DLQ
# unrun jobs.
MAX_RECEIVE_COUNT = 100
MESSAGE_RETENTION_DAYS = 14
FINISHED_JOB_TTL_DAYS = 30  # > retention, so a record outlives any message for its job

# Job limits.
DEFAULT_MAX_ATTEMPTS = 3
MAX_MAX_ATTEMPTS = 25
MAX_PAYLOAD_BYTES = 64 * 1024  # serialised payload; an SQS message holds 256 KiB
MAX_BATCH_JOBS = 100  # POST /v1/jobs:batch; the whole request must stay under Lambda's 6 MB invoke payload
MAX_SQS_DELAY_SECONDS = 15 * 60
RETRY_BACKOFF_BASE_SECONDS = 2
RETRY_BACKOFF_CAP_SECONDS = 15 * 60  # SQS ChangeMessageVisibility caps at 12 h; we cap lower

# API-key cache in each API instance: a revoked key keeps working this long.
API_KEY_CACHE_SECONDS = 300


@dataclass(frozen=True)
class Profile:
    """Deploy-time knobs that differ between AWS and the embedded emulator."""

    name: str
    worker_timeout_seconds: int
    dax: bool  # DAX cluster + VPC; the emulator has neither
    chaos_job_types: bool  # job types that kill their worker, for fault tests

    @property
    def visibility_timeout_seconds(self) -> int:
        # AWS guidance for SQS event sources: >= 6 x function timeout + batching window.
        return 6 * self.worker_timeout_seconds + WORKER_BATCHING_WINDOW_SECONDS

    @property
    def lease_seconds(self) -> int:
        # A claim outlives the invocation that made it, and expires before the
        # message comes back (visibility timeout), so a crashed attempt is taken over.
        return self.worker_timeout_seconds + 5


PROFILES = {
    "aws": Profile(name="aws", worker_timeout_seconds=30, dax=True, chaos_job_types=False),
    # Short timeouts so crash-recovery tests wait seconds, not minutes.
    "local": Profile(name="local", worker_timeout_seconds=5, dax=False, chaos_job_types=True),
}


def env(name: str, default: str | None = None) -> str:
    """A setting the stack put into a function's environment."""
    value = os.environ.get(name, default)
    if value is None:
        raise RuntimeError(f"missing environment variable {name}; is this running inside the corral stack?")
    return value
