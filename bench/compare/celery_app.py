"""The Celery side of `make compare`: the `echo` task, with SQS as the broker and DynamoDB as the result store.

Runs in the Celery venv (.corral/celery-venv), as the worker (`celery -A bench.compare.celery_app
worker`) and in the load generator (bench/compare/celery_load.py). Where it finds the emulator:
COMPARE_SQS_ENDPOINT (SQS, direct, as corral's enqueues go) and COMPARE_DYNAMODB_ENDPOINT (the fault
proxy, so a store blip reaches it as it reaches the functions).

Celery's defaults are kept, but for what SQS requires (no remote control: SQS has no broadcast) and
one setting for latency: `polling_interval` 0, so an empty long poll is followed at once by the next
instead of a 1 s pause (corral's event source polls without a pause too). Tasks are acknowledged
before they run (Celery's default `acks_late=False`): a killed worker process loses its task.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any
from urllib.parse import urlsplit

from celery import Celery

from bench.compare.names import CELERY_QUEUE, CELERY_RESULTS_TABLE

_sqs = urlsplit(os.environ.get("COMPARE_SQS_ENDPOINT", "http://127.0.0.1:4566"))
_dynamodb = os.environ.get("COMPARE_DYNAMODB_ENDPOINT", "http://127.0.0.1:4566")
_dynamodb_host = urlsplit(_dynamodb)

app = Celery("compare")
app.conf.update(
    broker_url=f"sqs://test:test@{_sqs.hostname}:{_sqs.port}",
    broker_transport_options={"region": "us-east-1", "is_secure": False, "polling_interval": 0},
    task_default_queue=CELERY_QUEUE,
    result_backend=f"dynamodb://test:test@{_dynamodb_host.hostname}:{_dynamodb_host.port}/{CELERY_RESULTS_TABLE}",
    dynamodb_endpoint_url=_dynamodb,
    worker_enable_remote_control=False,
    broker_connection_retry_on_startup=True,
)
logger = logging.getLogger("compare.echo")


@app.task(name="echo", bind=True)
def echo(self: Any, payload: Any, enqueued_at: float, schedule: str | None = None) -> dict[str, Any]:
    """Return the payload, as corral's built-in `echo` does, with what the benchmark reads back: when it
    was enqueued and started, and the schedule it stands for (a cron)."""
    started_at = time.time()
    # One line per run, naming the task: the benchmark counts the tasks run more than once.
    logger.warning("ran %s", self.request.id)
    return {"payload": payload, "enqueued_at": enqueued_at, "started_at": started_at, "schedule": schedule}
