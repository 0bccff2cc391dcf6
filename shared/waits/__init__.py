"""What an event does, and what resumes a waiting durable job: an event of its tenant (which also starts its tenant's
triggers' jobs: `triggers`), a token's completion, its own timer (docs/decisions/durable-jobs.md "Waiting",
docs/decisions/triggers.md)."""
