"""The job type `make fence` deploys beside the example package (bench/scenarios/fence.py): not part of any profile.

`fence-invoke` was the prototype of option (a) of docs/decisions/customer-code-fence.md: the job's
code in its own function, invoked synchronously by the worker with a client kept for the
environment's life. Now that option (a) is built, this package is a customer's package like any
other, so `fence-invoke` itself runs in the jobs function, and its invoke of `fence-echo` is a second
hop: the benchmark's kept-client kind measures worker -> jobs function -> fence-echo until it is
changed to a customer type that returns its payload.
"""
