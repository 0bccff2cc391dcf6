"""Open-loop API enqueue load: client threads take send slots from one shared schedule.

The schedule follows the scenario's rate (R x the phase's factor); a thread sleeps until its
slot, sends, and records the latency. A slot more than MAX_LAG_SECONDS late (every thread was
busy) is skipped and counted, not sent late, so the load never outlasts its timeline; the
achieved rate then falls below the target, which the report shows (the rate was not sustained).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import requests

MAX_LAG_SECONDS = 1.0

# A load's timeline as data: (phase name, seconds, requests/s) one after another. Unlike a `rate_at`
# callable it can be handed to a load generator in another process (bench/compare's Celery load).
Phases = Sequence[tuple[str, float, float]]


def rate_of_phases(phases: Phases) -> Callable[[float], tuple[str, float] | None]:
    """`rate_at` for EnqueueLoad from a list of phases: the phase at `elapsed` and its rate, None after the last."""

    def rate_at(elapsed: float) -> tuple[str, float] | None:
        start = 0.0
        for name, seconds, rate in phases:
            if start <= elapsed < start + seconds:
                return name, rate
            start += seconds
        return None

    return rate_at


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the load started, when the request was sent
    latency_ms: float
    status: int  # HTTP status, 0 for a connection error or timeout
    job_id: str | None
    phase: str


class EnqueueLoad:
    def __init__(
        self,
        api_url: str,
        api_key: str,
        rate_at: Callable[[float], tuple[str, float] | None],
        threads: int,
        payload: Callable[[int], object] = lambda n: {"n": n},
        job_type: str = "echo",
        job_fields: dict[str, object] | None = None,
    ) -> None:
        """`rate_at(elapsed)` -> (phase name, requests/s > 0), or None when the load is over. `job_fields`:
        more of each job's fields (max_attempts, timeout_seconds)."""
        self._url = api_url + "/v1/jobs"
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._rate_at = rate_at
        self._payload = payload
        self._job_type = job_type
        self._job_fields = job_fields or {}
        self._threads = [threading.Thread(target=self._client, daemon=True) for _ in range(threads)]
        self._lock = threading.Lock()
        self._next_slot = 0.0
        self._count = 0
        self.samples: list[Sample] = []
        self.skipped: dict[str, int] = {}  # phase -> slots skipped because every client was busy
        self.started = 0.0

    def start(self, at: float | None = None) -> None:
        """Start the clients; the schedule's time 0 is `at` (time.monotonic(), the same clock in every
        process of the machine) when given, else now."""
        self.started = time.monotonic() if at is None else at
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        for thread in self._threads:
            thread.join()

    def _take_slot(self) -> tuple[float, str, int] | None:
        with self._lock:
            planned = self._rate_at(self._next_slot)
            if planned is None:
                return None
            phase, rate = planned
            slot = self._next_slot
            self._next_slot += 1 / rate
            self._count += 1
            return slot, phase, self._count

    def _client(self) -> None:
        session = self._session()
        while True:
            taken = self._take_slot()
            if taken is None:
                return
            slot, phase, number = taken
            delay = self.started + slot - time.monotonic()
            if delay < -MAX_LAG_SECONDS:
                with self._lock:
                    self.skipped[phase] = self.skipped.get(phase, 0) + 1
                continue
            if delay > 0:
                time.sleep(delay)
            self.samples.append(self._send(session, phase, number))

    def _session(self) -> Any:
        """Each client thread's own connection (a subclass sending another way returns its own)."""
        return requests.Session()

    def _send(self, session: Any, phase: str, number: int) -> Sample:
        sent = time.monotonic()
        status, job_id = self._enqueue(session, number)
        return Sample(sent - self.started, (time.monotonic() - sent) * 1000, status, job_id, phase)

    def _enqueue(self, session: Any, number: int) -> tuple[int, str | None]:
        """One enqueue: (HTTP status, 0 for no answer; the job's id when accepted)."""
        try:
            response = session.post(
                self._url,
                json={"type": self._job_type, "payload": self._payload(number), **self._job_fields},
                headers=self._headers,
                timeout=10,
            )
            return response.status_code, response.json()["id"] if response.status_code == 202 else None
        except requests.RequestException:  # no answer, or an unreadable one
            return 0, None
