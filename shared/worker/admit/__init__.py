"""Admitting a delivery: may its job start now? Its claim, its tenant's running slots and its concurrency key's,
the wait of a job that may not start yet, and a first delivery run without a claim while the store fails."""
