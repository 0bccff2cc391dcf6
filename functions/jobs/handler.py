"""Jobs function: runs one job of a customer's type for the worker, behind a fence.

The worker claims the job and invokes this function synchronously with the one job (its type,
payload, id, attempt, tenant and time left); the function runs the type's `validate` hook, then its
code, within that time, and answers the result or the job's failure (shared/execution/fenced_job.py).
Its role writes its own log group and nothing else: no table, no queue, no secret
(docs/decisions/customer-code-fence.md).

Only the customer's job packages are loaded here (FunctionEnv.jobs_package), and only here: the
worker and the API never import them. No Powertools, no boto3 of its own: a cold start imports the
packages and little else.
"""

from __future__ import annotations

from typing import Any

from shared.execution import fenced_job
from shared.jobs import job_types

# The customer's packages load at import: in the init phase, not on the first job's clock. A package
# that fails to import fails the init, and every invoke answers a FunctionError: a failed attempt.
job_types.load_packages()


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    return fenced_job.answer(event)
