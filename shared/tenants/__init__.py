"""Tenants, their API keys and operator keys, their quotas and rate limits."""
