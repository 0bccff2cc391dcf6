"""The job type `make fence` deploys beside the example package (bench/fence.py): not part of any profile.

`fence-invoke` is option (a) of docs/decisions/customer-code-fence.md as the platform would build
it: the job's code in its own function, invoked synchronously by the worker with a client kept for
the environment's life. The built-in `lambda` type builds a client for each invoke (its read
timeout is the job's time left), which the benchmark measures apart.
"""
