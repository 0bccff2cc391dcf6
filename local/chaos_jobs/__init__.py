"""Job types for fault tests, deployed only by the local profile (infra/jobs_package.py adds this package).

They kill their own worker or return more than the store keeps, so the aws profile's bundle does not
contain them at all. Written as any job package is (`corral_jobs`' `job_type`), but deployed as the
platform's test tooling: in the worker's code asset, loaded by the worker, not sent to the jobs
function as a customer's package is. `crash` must kill the worker's process for the resilience tests
to see a worker die (docs/decisions/customer-code-fence.md, "The chaos tooling stays in the worker").
"""
