"""The SLO benchmark (`make bench`): steady load, a midnight herd, faults, drain; measured, printed, plotted.

See docs/benchmark.md for how to run it and what each figure means.
"""
