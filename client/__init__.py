"""The corral Python SDK.

    from corral_client import Corral          # installed with `pip install ./client`
    corral = Corral(api_url, api_key)
    job_id = corral.enqueue("echo", {"hello": "world"})
    job = corral.wait(job_id)

Inside the corral repository this folder is imported as `client` (tests, CLI, benchmark).
Every error is a `CorralError` (`status`, `code`, `field`); see `errors`.
"""

from .corral import BATCH_SIZE, Batches, Corral, Schedules
from .errors import (
    Conflict,
    ConnectionFailed,
    CorralError,
    Forbidden,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    WaitTimeout,
)
from .retrying import RetryPolicy
from .signatures import SignatureVerificationError, verify_signature  # HTTP jobs' requests
from .types import (
    BATCH_FINISHED,
    FINISHED,
    Accepted,
    Batch,
    BatchPage,
    Callback,
    Concurrency,
    EnqueueOutcome,
    Job,
    JobPage,
    JobSpec,
    RetriedMany,
    Schedule,
    SchedulePage,
    ScheduleRun,
    Stats,
    Triggered,
)

JobTimeout = WaitTimeout  # the name this package used before `WaitTimeout`

__all__ = [
    "BATCH_FINISHED",
    "BATCH_SIZE",
    "FINISHED",
    "Accepted",
    "Batch",
    "BatchPage",
    "Batches",
    "Callback",
    "Concurrency",
    "Conflict",
    "ConnectionFailed",
    "Corral",
    "CorralError",
    "EnqueueOutcome",
    "Forbidden",
    "InvalidRequest",
    "Job",
    "JobPage",
    "JobSpec",
    "JobTimeout",
    "NotFound",
    "PermissionDenied",
    "QuotaExceeded",
    "RateLimited",
    "RetriedMany",
    "RetryPolicy",
    "Schedule",
    "SchedulePage",
    "ScheduleRun",
    "Schedules",
    "ServerError",
    "SignatureVerificationError",
    "Stats",
    "Triggered",
    "Unauthorized",
    "Unavailable",
    "WaitTimeout",
    "verify_signature",
]
