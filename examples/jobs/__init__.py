"""A worked example of a customer's job package: `make up` deploys it (`-c corral:jobs=examples/jobs`).

Every module in the package is imported when the jobs function starts (the function that runs a
customer's jobs, behind a fence: docs/decisions/customer-code-fence.md), so each `@job_type` below is
registered by being in the package; `requirements.txt` beside it goes into a layer of its own, on that
function only.
"""
