"""Job types that deliver a job to something the customer runs (an HTTP endpoint, a Lambda function).

Every module here is imported by `shared.jobs.job_types.load()`, and its types register with `@builtin_job_type`.
"""
