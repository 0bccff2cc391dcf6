"""Runnable examples of the SDK; each one's docstring ends with the output it prints (checked by
tests/e2e/test_examples.py). Run one with `python -m examples.<name>` and CORRAL_API_URL/CORRAL_API_KEY set."""
