"""Operator tasks: the dead-letter queue, queue health, recounting quotas."""
