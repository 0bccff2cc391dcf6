"""Bulk enqueue rate: client threads POST /v1/jobs:batch (100 jobs each) back to back for a while; and the
queue's own ceiling in the same run, the same threads sending `SendMessageBatch` calls straight to it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
from botocore.exceptions import BotoCoreError, ClientError

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

    def post(session: requests.Session, headers: dict[str, str]) -> dict[str, int]:
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
        return counts

    def client() -> Callable[[], dict[str, int]]:
        session, headers = requests.Session(), {"Authorization": f"Bearer {api_key}"}
        return lambda: post(session, headers)

    return _run(client, seconds=seconds, clients=clients)


# About the size of the message a bulk-enqueued echo job becomes (bench/scenarios/cost.py sends the same).
_CEILING_BODY = "x" * 180


def queue_ceiling(sqs: Any, queue_url: str, *, seconds: float, clients: int) -> BulkResult:
    """What the queue itself takes from `clients` threads sending `SendMessageBatch` calls of 10 bodies back to
    back (no API Gateway, no function, no checks): the most a bulk enqueue through the API could reach on
    this queue at this moment, measured beside it."""
    entries = [{"Id": str(n), "MessageBody": _CEILING_BODY} for n in range(10)]

    def send() -> dict[str, int]:
        counts = {"requests": 1, "accepted": 0, "rejected": 0, "errors": 0}
        try:
            answer = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
            counts["accepted"], counts["rejected"] = len(answer.get("Successful", [])), len(answer.get("Failed", []))
        except (BotoCoreError, ClientError):  # a failed call is counted
            counts["errors"] = 1
        return counts

    return _run(lambda: send, seconds=seconds, clients=clients)


def _run(client: Callable[[], Callable[[], dict[str, int]]], *, seconds: float, clients: int) -> BulkResult:
    """`clients` threads, each calling its own `client()`'s call back to back until `seconds` have passed."""
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    totals = {"requests": 0, "accepted": 0, "rejected": 0, "errors": 0}

    def loop() -> None:
        call = client()
        while time.monotonic() < deadline:
            counts = call()
            with lock:
                for key, value in counts.items():
                    totals[key] += value

    started = time.monotonic()
    threads = [threading.Thread(target=loop, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    return BulkResult(jobs_per_second=totals["accepted"] / elapsed, seconds=elapsed, clients=clients, **totals)
