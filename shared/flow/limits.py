"""Flow control's tunables: throttles, debounces, unique keys, priorities, event triggers (shared/settings.py holds
the product's others; these live beside the wing that reads them). Each mechanism's page: docs/decisions/throttle.md,
debounce.md, unique-jobs.md, priorities.md, triggers.md."""

from __future__ import annotations

from shared import settings

# A throttle's, a debounce's or a unique key: as long as a concurrency key.
MAX_FLOW_KEY_CHARS = settings.MAX_CONCURRENCY_KEY_CHARS
THROTTLE_MAX_LIMIT = 1_000
THROTTLE_MIN_PERIOD_SECONDS = 1
THROTTLE_MAX_PERIOD_SECONDS = 86_400
# A job given a turn starts (is claimed) within half of this, or takes another; its start is counted all of this
# after its turn, the other half left for two machines' clocks, so a window never holds one start too many.
THROTTLE_START_GRACE_SECONDS = 0.25
# A key's log counts starts on a grid of period / this (rounded up): a start counts at most a 64th of the period
# late, and the log's item stays ~1 KB whatever the limit.
THROTTLE_LOG_CELLS = 64
THROTTLE_TAKE_TRIES = 4  # conditional writes for one key's turns before its jobs wait (another worker won each race)
DEBOUNCE_MIN_PERIOD_SECONDS = 1
DEBOUNCE_MAX_PERIOD_SECONDS = 86_400
DEBOUNCE_MAX_WAIT_SECONDS = 7 * 86_400
UNIQUE_MAX_FOR_SECONDS = 30 * 86_400
# A unique key taken by an enqueue that never confirmed its job sent (its send failed, or the request died between
# its calls) is free again after this: no key stays held by a job that was never enqueued.
UNIQUE_UNSENT_SECONDS = 60
TRIGGER_NAME_MAX_LENGTH = 64
# Priority lanes: the high and the low queue each get this share of the worker's concurrent batches (at least
# PRIORITY_LANE_LEAST, an SQS event source's least), the default queue the rest (docs/decisions/priorities.md).
PRIORITY_LANE_SHARE = 0.1
PRIORITY_LANE_LEAST = 2
