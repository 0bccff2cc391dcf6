"""What a customer's job package imports: the decorator, the context, and the failures it may raise.

    from corral_jobs import JobContext, JobFailed, job_type

    INVOICE = {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}

    @job_type("send_invoice", timeout_seconds=120, max_attempts=5, payload_schema=INVOICE)
    def send_invoice(payload: dict, context: JobContext) -> dict:
        ...

Deploy the package with the stack: `-c corral:jobs=path/to/package` (README, "Your own jobs").
A durable job records its steps, sleeps and waits through the same context: `context.step(...)`,
`context.sleep(...)`, `context.wait_for_event(...)`, `context.create_token(...)` with
`context.wait_for_token(...)`, `context.run_job(...)` (docs/decisions/durable-jobs.md).

The package runs in the jobs function only, a function with no rights of corral's, which the worker
invokes for each job (docs/decisions/customer-code-fence.md): the API checks a payload with the
type's `payload_schema` (a JSON Schema), and the worker schedules and times a job by the type's
declaration, neither by importing the package.
"""

from shared.durable.failures import ChildJobFailed, DurableError, DurableMisuse, StepFailed, StepResultTooLarge
from shared.jobs.registry import InvalidPayload, JobContext, JobDead, JobFailed, JobTimedOut, job_type

__all__ = [
    "ChildJobFailed",
    "DurableError",
    "DurableMisuse",
    "InvalidPayload",
    "JobContext",
    "JobDead",
    "JobFailed",
    "JobTimedOut",
    "StepFailed",
    "StepResultTooLarge",
    "job_type",
]
