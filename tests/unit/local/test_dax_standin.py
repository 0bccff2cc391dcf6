"""The local status cache (DAX's stand-in): a read's fill never overwrites a write that landed
while the read was fetching, so a job polled just before its worker's write is not `queued` for a TTL."""

from __future__ import annotations

from local.dax_standin import ItemCache

KEY = ItemCache.key("corral-jobs", {"pk": {"S": "job#j1"}})
DEAD = {"pk": {"S": "job#j1"}, "status": {"S": "dead"}}


def test_a_miss_fetched_before_a_write_does_not_hide_the_write():
    cache = ItemCache(ttl_seconds=300)
    stamp = cache.stamp(KEY)  # a poll misses and starts fetching: the store has no item yet
    cache.put(KEY, DEAD)  # the worker's write passes through the cache meanwhile
    cache.fill(KEY, None, stamp)  # the poll's fetch returns "absent", now stale
    assert cache.get(KEY) == (True, DEAD)


def test_a_fill_without_a_write_in_between_is_cached_and_a_forget_counts_as_a_write():
    cache = ItemCache(ttl_seconds=300)
    cache.fill(KEY, None, cache.stamp(KEY))
    assert cache.get(KEY) == (True, None)  # the negative entry, as DAX caches misses
    stamp = cache.stamp(KEY)
    cache.forget(KEY)
    cache.fill(KEY, None, stamp)
    assert cache.get(KEY) == (False, None)
