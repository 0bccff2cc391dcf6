"""Code the corral Lambda functions share: job model, store, queue, ids, settings."""
