"""Bulk enqueue rate: client threads POST /v1/jobs:batch (100 jobs each) back to back for a while."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import requests

from shared import settings


@dataclass(frozen=True)
class BulkResult:
    jobs_per_second: float
    requests: int
    accepted: int
    rejected: int
    errors: int  # requests answered with neither 202 nor 207
    seconds: float
    clients: int


def bulk_rate(api_url: str, api_key: str, *, seconds: float, clients: int) -> BulkResult:
    jobs = [{"type": "echo", "payload": {"n": n}} for n in range(settings.MAX_BATCH_JOBS)]
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    totals = {"requests": 0, "accepted": 0, "rejected": 0, "errors": 0}

    def client() -> None:
        session = requests.Session()
        headers = {"Authorization": f"Bearer {api_key}"}
        while time.monotonic() < deadline:
            counts = {"requests": 1, "accepted": 0, "rejected": 0, "errors": 0}
            try:
                response = session.post(f"{api_url}/v1/jobs:batch", json={"jobs": jobs}, headers=headers, timeout=30)
                if response.status_code in (202, 207):
                    body = response.json()
                    counts["accepted"], counts["rejected"] = body["accepted"], body["rejected"]
                else:
                    counts["errors"] = 1
            except requests.RequestException:
                counts["errors"] = 1
            with lock:
                for key, value in counts.items():
                    totals[key] += value

    started = time.monotonic()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    return BulkResult(jobs_per_second=totals["accepted"] / elapsed, seconds=elapsed, clients=clients, **totals)
