"""Faults against durable jobs on the embedded stack (docs/decisions/durable-jobs.md): the jobs function killed
during a step, a store blip while steps' results are recorded, and a waiting job's message delivered again.

`ledger_steps` (examples/jobs/ledger.py) appends `start <step> <attempt>` and `end <step> <attempt>` to a file
the test names, so the test counts how often each step really ran, outside corral. The promise each test holds
it to: a step whose result was recorded never runs again, so the steps' starts never go back to an earlier step.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from local.deploy import DEMO_TENANT
from shared import settings
from tests.e2e.helpers import eventually, every_copy_claimed
from tests.e2e.test_durable_clients import PAID_ORDER_STEPS, _steps

pytestmark = pytest.mark.e2e

BLIP_SECONDS = 4


def _ledger(path: Path) -> list[tuple[str, int, int]]:
    """(start | end, step, attempt) per line, in the order the steps wrote them."""
    if not path.exists():
        return []
    return [
        (what, int(step), int(attempt))
        for what, step, attempt in (line.split() for line in path.read_text().split("\n") if line)
    ]


def _starts(path: Path) -> list[int]:
    return [step for what, step, _ in _ledger(path) if what == "start"]


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    tmp_path.chmod(0o777)  # the jobs function's process writes it
    return tmp_path / "ledger.txt"


def test_a_jobs_function_killed_mid_step_runs_only_that_step_again(api, chaos, ledger):
    job_id = api.enqueue("ledger_steps", {"ledger": str(ledger), "seconds": [0, 3, 0]})
    eventually(lambda: 1 in _starts(ledger), timeout=120, interval=0.1, message="step-1 to start")

    killed = chaos.kill_worker(settings.JOBS_FUNCTION)
    done = api.wait(job_id, timeout=180)

    assert killed, "no jobs function process found to kill"
    assert done["status"] == "succeeded", done
    starts = _starts(ledger)
    assert starts.count(0) == 1, _ledger(ledger)  # recorded before the kill: never run again
    assert starts.count(1) >= 2, _ledger(ledger)  # the kill cut it short: it ran again
    assert starts == sorted(starts), _ledger(ledger)  # no recorded step ran again after a later one started
    first, second, _third = done["result"]
    assert first == 1 and second >= 2, done["result"]  # step-0's recorded result, step-1's from the later attempt
    assert _steps(done)["step-0"] == ("succeeded", 1)
    assert all(status == "succeeded" for status, _ in _steps(done).values())


def _injected(chaos) -> int:
    return sum(
        count
        for name, count in chaos.stats()["proxy"].items()
        if name.startswith("dynamodb.") and name.endswith(".injected")
    )


def test_a_store_blip_while_steps_are_recorded_loses_nothing_and_runs_no_recorded_step_again(api, chaos, ledger):
    steps = 8
    job_id = api.enqueue("ledger_steps", {"ledger": str(ledger), "seconds": [0.3] * steps})
    eventually(lambda: ("end", 1, 1) in _ledger(ledger), timeout=120, interval=0.05, message="step-1 to end")
    injected_before = _injected(chaos)

    chaos.blip(seconds=BLIP_SECONDS, service="dynamodb", mode="error")
    time.sleep(BLIP_SECONDS + 0.5)  # the API's reads fail during the blip too: ask once it is over
    done = api.wait(job_id, timeout=240)

    assert _injected(chaos) > injected_before, "the blip did not hit the store"
    assert done["status"] == "succeeded", done
    assert list(_steps(done)) == [f"step-{n}" for n in range(steps)]
    assert all(status == "succeeded" for status, _ in _steps(done).values()), done["steps"]
    starts = _starts(ledger)
    assert starts == sorted(starts), _ledger(ledger)  # a recorded step never started again
    assert sorted(set(starts)) == list(range(steps))
    # A step runs again only when its attempt failed before its result was recorded: one step per such attempt.
    assert len(starts) - steps <= done["attempts"] - 1, (_ledger(ledger), done["attempts"])
    # Each step's recorded result is the attempt of its last run in the ledger: the run whose result counts.
    last_run = {step: attempt for what, step, attempt in _ledger(ledger) if what == "end"}
    assert done["result"] == [last_run[n] for n in range(steps)], (done["result"], _ledger(ledger))


def _copy_of_message(job: dict[str, Any], payload: dict[str, Any], max_attempts: int) -> str:
    """The job's message as the API sent it (shared/model/message.py's body)."""
    body = {
        "v": 1,
        "id": job["id"],
        "tenant": DEMO_TENANT,
        "type": job["type"],
        "payload": payload,
        "max_attempts": max_attempts,
        "enqueued_at": job["enqueued_at"],
    }
    if job.get("timeout_seconds"):
        body["timeout_seconds"] = job["timeout_seconds"]
    return json.dumps(body)


def _claims(chaos, job_id: str) -> int:
    return sum(
        1 for r in chaos.store_requests(job_id) if r["operation"] == "UpdateItem" and r["sets_status"] == "running"
    )


def test_a_redelivered_message_of_a_job_waiting_for_an_event_neither_resumes_it_early_nor_twice(api, deployed, chaos):
    order = f"o-{uuid.uuid4().hex[:8]}"
    payload = {"order": order, "pay_within_seconds": 600}
    job_id = api.enqueue("order_flow", payload)
    waiting = api.wait(job_id, statuses=("waiting",), timeout=120)
    sqs, url = deployed.aws("sqs"), deployed.queue_url()
    claims = _claims(chaos, job_id)

    for _ in range(2):
        sqs.send_message(QueueUrl=url, MessageBody=_copy_of_message(waiting, payload, waiting["max_attempts"]))
    every_copy_claimed(chaos, job_id, claims + 2)

    still = api.get(job_id)
    assert still["status"] == "waiting" and still["waiting_for"] == waiting["waiting_for"], still
    assert _steps(still) == {"reserve": ("succeeded", 1), "payment": ("waiting", 1)}
    api.events.send("payment.received", {"order": order, "amount_cents": 700}, id=f"pay-{order}")
    done = api.wait(job_id, timeout=120)
    assert done["status"] == "succeeded" and done["result"]["status"] == "paid", done
    assert _steps(done) == PAID_ORDER_STEPS


def test_a_redelivered_message_of_a_sleeping_job_does_not_wake_it_before_its_time(api, deployed, chaos):
    job_id = api.enqueue("nap", {"seconds": 12})
    waiting = api.wait(job_id, statuses=("waiting",), timeout=120)
    until = waiting["waiting_for"]["until"]
    claims = _claims(chaos, job_id)

    copy = _copy_of_message(waiting, {"seconds": 12}, waiting["max_attempts"])
    deployed.aws("sqs").send_message(QueueUrl=deployed.queue_url(), MessageBody=copy)
    every_copy_claimed(chaos, job_id, claims + 1)

    assert time.time() < until, "the copy was handled after the sleep's end: nothing tested"
    assert api.get(job_id)["status"] == "waiting"
    done = api.wait(job_id, timeout=120)
    assert done["status"] == "succeeded", done
    assert done["result"] == {"before": "before", "after": "after"}
    assert _steps(done) == {"before": ("succeeded", 1), "nap": ("succeeded", 1), "after": ("succeeded", 1)}
    nap = next(step for step in done["steps"] if step["id"] == "nap")
    assert nap["finished_at"] >= until, (nap, until)  # woken at its time, not by the copy
