"""What resumes a waiting durable job: an event of its tenant, a token's completion, its own timer
(docs/decisions/durable-jobs.md "Waiting")."""
