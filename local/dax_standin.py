"""The local stand-in for DAX: an item cache with DAX's semantics, shared by every function instance.

It speaks the DynamoDB JSON protocol, so the functions use it through the same
low-level client interface they use for DAX (`shared/aws/status_cache.py`):

- GetItem (eventually consistent): answered from the cache; a miss is fetched and
  cached, a missing item as a negative entry ("not found"), both for the TTL.
- GetItem with ConsistentRead: passed through, not cached.
- PutItem / UpdateItem / DeleteItem: written to the store first; on success the
  cache holds the item as written (UpdateItem: the updated item, ALL_NEW); a failed
  write leaves the cache as it was.
- A failed condition answers without the old item, as DAX does for single-item
  writes (it does not support ReturnValuesOnConditionCheckFailure there).
- Everything else passes through.

It is one process, like one DAX node, so every function subprocess sees the same
cache. `GET /_status_cache/stats` reports hits and misses; `POST /_status_cache/flush` empties it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, OrderedDict
from typing import Any

from local.fault_proxy import FaultProxy
from local.proxy_base import Reply, Request, serve_main

PREFIX = "DynamoDB_20120810."
MAX_ENTRIES = 200_000
TTL_SECONDS = 300.0  # how long an item (or its absence) is served from the cache
_ABSENT = None  # a negative entry: the store has no such item


class ItemCache:
    """Items by key for the TTL. A read's fill never overwrites a write that landed while the read
    was fetching (a miss fetched "absent" just before the worker's write would otherwise keep the
    job `queued` for the whole TTL): writes stamp the key, and a fill stores only if the stamp is
    the one it saw when its fetch began."""

    def __init__(self, ttl_seconds: float) -> None:
        self.ttl_seconds = ttl_seconds
        self._entries: OrderedDict[tuple[str, str], tuple[float, dict[str, Any] | None]] = OrderedDict()
        self._written: OrderedDict[tuple[str, str], int] = OrderedDict()  # key -> its last write's number
        self._writes = 0
        self._lock = threading.Lock()

    @staticmethod
    def key(table: str, key: dict[str, Any]) -> tuple[str, str]:
        return table, json.dumps(key, sort_keys=True)

    def get(self, key: tuple[str, str]) -> tuple[bool, dict[str, Any] | None]:
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] < time.monotonic():
                return False, None
            return True, found[1]

    def stamp(self, key: tuple[str, str]) -> int:
        """What a read notes before fetching a miss, to hand to fill()."""
        with self._lock:
            return self._written.get(key, 0)

    def fill(self, key: tuple[str, str], item: dict[str, Any] | None, stamp: int) -> None:
        """Cache a fetched item, unless a write to the key landed since `stamp` was taken."""
        with self._lock:
            if self._written.get(key, 0) == stamp:
                self._store(key, item)

    def put(self, key: tuple[str, str], item: dict[str, Any] | None) -> None:
        """A write's new item (None: deleted)."""
        with self._lock:
            self._mark_written(key)
            self._store(key, item)

    def forget(self, key: tuple[str, str]) -> None:
        """A write whose new item is not known: the next read fetches it."""
        with self._lock:
            self._mark_written(key)
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _mark_written(self, key: tuple[str, str]) -> None:
        self._writes += 1
        self._written[key] = self._writes
        self._written.move_to_end(key)
        while len(self._written) > MAX_ENTRIES:
            self._written.popitem(last=False)

    def _store(self, key: tuple[str, str], item: dict[str, Any] | None) -> None:
        self._entries[key] = (time.monotonic() + self.ttl_seconds, item)
        self._entries.move_to_end(key)
        while len(self._entries) > MAX_ENTRIES:
            self._entries.popitem(last=False)


class StatusCache:
    """The request handler: DynamoDB JSON in, DynamoDB JSON out."""

    def __init__(self, upstream: str, ttl_seconds: float) -> None:
        # The fault proxy's faults, injected here for what passes through (job items): one local hop
        # instead of two. Measured from 8 threads, a conditional write through the cache and then
        # the proxy reached 311/s against 408/s through one hop (docs/decisions/status-cache.md).
        self.forward = FaultProxy(upstream)
        self.items = ItemCache(ttl_seconds)
        self.stats: Counter[str] = Counter()
        self._stats_lock = threading.Lock()

    def _count(self, name: str) -> None:
        with self._stats_lock:
            self.stats[name] += 1

    def __call__(self, request: Request) -> Reply:
        if request.path.startswith("/_status_cache/"):
            return self._control(request)
        if request.path.startswith("/_faults/"):
            return self.forward(request)
        operation = request.target.removeprefix(PREFIX)
        match operation:
            case "GetItem":
                return self._get_item(request)
            case "PutItem" | "UpdateItem" | "DeleteItem":
                return self._write(request, operation)
        self._count("passthrough")
        return self.forward(request)

    def _control(self, request: Request) -> Reply:
        if request.path == "/_status_cache/flush" and request.method == "POST":
            self.items.clear()
            return Reply.of_json(200, {"flushed": True})
        with self._stats_lock:
            return Reply.of_json(200, dict(self.stats) | {"ttl_seconds": self.items.ttl_seconds})

    def _get_item(self, request: Request) -> Reply:
        body = request.json()
        if body.get("ConsistentRead") or body.get("ProjectionExpression") or body.get("AttributesToGet"):
            self._count("consistent_or_projected_reads")
            return self.forward(request)
        key = ItemCache.key(body["TableName"], body["Key"])
        cached, item = self.items.get(key)
        if cached:
            self._count("hits")
            return Reply.of_json(200, {} if item is _ABSENT else {"Item": item})
        self._count("misses")
        stamp = self.items.stamp(key)
        reply = self.forward(request)
        if reply.status == 200:
            self.items.fill(key, reply.json().get("Item"), stamp)
        return reply

    def _write(self, request: Request, operation: str) -> Reply:
        self._count("writes")
        body = request.json()
        key = ItemCache.key(body["TableName"], body.get("Key") or _key_of(body))
        wanted = body.get("ReturnValues", "NONE")
        asks_all_new = operation == "UpdateItem" and wanted in ("NONE", "ALL_NEW")
        forwarded = {**body, "ReturnValues": "ALL_NEW"} if asks_all_new else body
        forwarded.pop("ReturnValuesOnConditionCheckFailure", None)  # DAX: not for single-item writes
        reply = self.forward(request, json.dumps(forwarded).encode())
        if reply.status != 200:
            return _without_old_item(reply)
        result = reply.json()
        if operation == "PutItem":
            self.items.put(key, body["Item"])
        elif operation == "DeleteItem":
            self.items.put(key, _ABSENT)
        elif asks_all_new:
            self.items.put(key, result.get("Attributes"))
            if wanted == "NONE":
                return Reply.of_json(200, {k: v for k, v in result.items() if k != "Attributes"}, _request_id(reply))
        else:
            self.items.forget(key)  # the reply does not hold the whole new item: the next read fetches it
        return reply


def _key_of(body: dict[str, Any]) -> dict[str, Any]:
    # PutItem carries the whole item; the jobs table's key is `pk` (infra/store.py).
    return {"pk": body["Item"]["pk"]}


def _request_id(reply: Reply) -> dict[str, str]:
    return {k: v for k, v in reply.headers.items() if k.lower() == "x-amzn-requestid"}


def _without_old_item(reply: Reply) -> Reply:
    if reply.status == 400 and b"ConditionalCheckFailed" in reply.body:
        document = reply.json()
        document.pop("Item", None)
        return Reply.of_json(reply.status, document, _request_id(reply))
    return reply


if __name__ == "__main__":
    serve_main(__doc__.splitlines()[0], lambda args: StatusCache(args.upstream, TTL_SECONDS))
