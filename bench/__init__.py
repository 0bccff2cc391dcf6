"""The benchmarks: `python -m bench` (`make bench`) is the SLO benchmark, steady load, a midnight herd, faults,
drain; measured, printed, plotted. The other scenarios are in `bench.scenarios`, their helpers in `bench.lib`.

See bench/README.md for every scenario and its command, and docs/benchmark.md for what each figure means.
"""
