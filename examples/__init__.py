"""Runnable examples of the SDK; each one's docstring ends with the output it prints (checked by
tests/e2e/test_examples.py). Run one with `python -m examples.<name>` and CORRAL_API_URL/CORRAL_API_KEY set.
The `.mjs` ones use the TypeScript SDK (client-ts/, built by `make install`): `node examples/<name>.mjs`;
their opening comment ends with the output."""
