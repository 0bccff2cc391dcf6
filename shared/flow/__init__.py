"""Flow control: what decides when a job may start, beyond its tenant's running cap and its concurrency key.

One module per mechanism, each pure (no AWS, no store): its spec as a job body, a batch's job, a schedule's
job or a type's default carries it, checked field by field; and its arithmetic and rules.

- `throttle`: at most `limit` starts of a key in any window of `period_seconds`; each waiting job is given
  its turn (docs/decisions/throttle.md).
- `debounce`: a key's jobs arriving within `period_seconds` of each other collapse into one run, the last's
  (docs/decisions/debounce.md).
- `unique`: while a key's job waits (or runs), another enqueue answers it as a duplicate
  (docs/decisions/unique-jobs.md).
- `priority`: high, default and low, each a queue and a lane of the worker (docs/decisions/priorities.md).
- `triggers`: events that start jobs (docs/decisions/triggers.md).
- `options`: the four options of one job, parsed together and checked against each other; `flow_key`: the
  key they name, given or read from a payload field.

The items these mechanisms keep are the store's (shared/store/flow/throttle_items.py, debounce_items.py,
unique_locks.py, trigger_items.py), which apply the rules here in conditional writes.
"""
