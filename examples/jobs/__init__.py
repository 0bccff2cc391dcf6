"""A worked example of a customer's job package: `make up` deploys it (`-c corral:jobs=examples/jobs`).

Every module in the package is imported when a function starts, so each `@job_type` below is
registered by being in the package; `requirements.txt` beside it goes into its own layer.
"""
