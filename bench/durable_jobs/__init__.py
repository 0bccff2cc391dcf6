"""The job types `make durable` deploys beside the example package (bench/scenarios/durable.py): in no profile.

A durable job of ten trivial steps, the same trivial work as one plain job (chained by callbacks or run
side by side), and a durable job that waits for an event: each as small as a job can be, so the figures
are what the platform adds. The sleep's samples use the example package's `nap`.
"""
