"""Durable jobs: a job's steps recorded once, its sleeps and waits holding nothing, its child jobs.

A job's code runs from the top on every run; a step it recorded returns its recorded result instead of
running again, and a sleep or a wait ends the attempt, to resume when its time comes or its event,
token or child arrives (docs/decisions/durable-jobs.md).

What lives here, from the customer's code outward:
- `failures`: the errors a job's code may meet (StepFailed, ChildJobFailed, StepResultTooLarge, misuse);
- `steps`: a step's record and the state machine every write of it follows, the limits a step keeps;
- `replay`: the run of a job's code against its recorded steps (JobContext's durable methods), in the
  jobs function; it stops at the first thing only the worker can do (`Suspended`);
- `protocol`: the worker's reading of what the jobs function answers: nothing it says is trusted;
- `matching`: event names, `match`, and which waits an event's data can resume;
- `tokens`: a token's id and its capability URL.

Nothing here touches AWS, so the jobs function imports it on its cold start, and the store builds on it:
the journal, the events and their waits, the tokens are the store's items (shared/store/durable/journal_items.py,
event_items.py, token_items.py).
"""
