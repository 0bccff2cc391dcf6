"""Durable jobs' items: the journal of a job's steps, the events and the index of the waits they resume, tokens."""
