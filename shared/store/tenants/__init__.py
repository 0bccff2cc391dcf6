"""A tenant's items: its record and keys, signing secrets, counters (quotas, holds, rate windows), running slots."""
