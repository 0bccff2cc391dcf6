"""Re-reading a cached value off the request path (stale-while-revalidate).

An API instance caches what it reads on every request (whose key this is, a tenant's limits). When
such an entry's time runs out, the request that finds it is answered from it at once and the entry is
re-read in the background: a request never waits for the store to confirm what it already knows, and
while the store fails (a blip) the failed re-read's retries cost no request anything. In Lambda the
background thread runs while the environment serves requests and is frozen between them; a re-read
started before a freeze finishes in the next invocation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor, wait


class Refresher:
    """Runs re-reads in the background, at most one at a time per key."""

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix=name)
        self._pending: dict[Hashable, Future[None]] = {}
        self._lock = threading.Lock()

    def start(self, key: Hashable, reread: Callable[[], None]) -> None:
        """Run `reread` in the background unless one for `key` is under way. It handles its own errors
        (an exception is dropped: the entry stays as it was, and a later request starts another)."""
        with self._lock:
            if key in self._pending:
                return
            future = self._executor.submit(reread)
            self._pending[key] = future
        future.add_done_callback(lambda _: self._done(key))

    def _done(self, key: Hashable) -> None:
        with self._lock:
            self._pending.pop(key, None)

    def wait(self, timeout: float = 10) -> None:
        """Until every re-read started so far has ended (tests; a process about to exit)."""
        with self._lock:
            pending = list(self._pending.values())
        wait(pending, timeout=timeout)
