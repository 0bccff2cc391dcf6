"""What a customer's job package imports: the decorator, the context, and the failures it may raise.

    from corral_jobs import JobContext, JobFailed, job_type

    @job_type("send_invoice", timeout_seconds=120, max_attempts=5)
    def send_invoice(payload: dict, context: JobContext) -> dict:
        ...

Deploy the package with the stack: `-c corral:jobs=path/to/package` (README, "Your own jobs").
"""

from shared.jobs.registry import InvalidPayload, JobContext, JobDead, JobFailed, JobTimedOut, job_type

__all__ = ["InvalidPayload", "JobContext", "JobDead", "JobFailed", "JobTimedOut", "job_type"]
