"""Durable jobs' tunables: steps, results, waits, events and tokens (shared/settings.py holds the product's others;
these live beside the wing that reads them). See docs/decisions/durable-jobs.md "Limits"."""

from __future__ import annotations

from shared import settings

MAX_STEPS_PER_JOB = 1_000  # steps a job records, of every kind (Inngest's bound too)
# A step id: unique within its job, a key of the job's journal (at most 1,000 of them in one 400 KB item).
MAX_STEP_ID_CHARS = 64
MAX_STEP_RESULT_BYTES = settings.MAX_PAYLOAD_BYTES  # a step's result, an event's data, a token's data, a child's result
# Every result a job has recorded travels to the jobs function in each invoke, whose request Lambda caps at 6 MB.
MAX_RECORDED_BYTES = 4 * 1024 * 1024
STEP_RESULT_INLINE_BYTES = 4 * 1024  # a result up to this size lives in the journal; a larger one in an item of its own
JOURNAL_MAX_BYTES = 350 * 1024  # the journal item, under DynamoDB's 400 KB: larger results move to their own items
MAX_WAIT_SECONDS = settings.MAX_RUN_AT_DAYS * 86_400  # a sleep, or an event's, token's timeout
MAX_EVENT_NAME_CHARS = 256
MAX_EVENT_ID_CHARS = 256
MAX_MATCH_BYTES = 512  # a wait's `match`, serialised: it sits in the wait's index entry
# How long a sent event is kept for a wait that registers after it (the wait looks back to its previous step).
EVENT_LOOKBACK_SECONDS = 86_400
# Two machines' clocks differ by milliseconds: a wait's lookback starts this much before its window opens.
EVENT_CLOCK_MARGIN_SECONDS = 1.0
WAITS_PER_INDEX_PAGE = 400  # waiting jobs in one page of a (name, match pair)'s index: ~700 B each, under 400 KB
TOKEN_ID_PREFIX = "tk_"
