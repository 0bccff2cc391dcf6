"""What several end-to-end tests share: `eventually`, their one way to wait, and the waits built on it
(including the positive waits that come before asserting that something did not happen); a job's dead
letters, and its outcome writes that reached the store."""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar

from client import FINISHED, Corral
from local.chaos import Chaos
from local.platform import Platform
from shared import settings

T = TypeVar("T")


def eventually(check: Callable[[], T], *, message: str, timeout: float = 30, interval: float = 0.5) -> T:
    """What `check()` returns once it is truthy and raises no AssertionError, asked every `interval` s.

    A bound on the wait, never a claim about speed: give it room for a loaded machine. After `timeout` s it
    fails naming what it waited for (`message`) and the last answer, or the last AssertionError. A check
    that asserts returns what it checked; any other exception ends the wait at once (pytest.fail too).
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = check()
        except AssertionError as failed:
            last = f"AssertionError: {failed}"
        else:
            if answer:
                return answer
            last = repr(answer)
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {message}; last: {last[:2000]}")
        time.sleep(interval)


def outcome_writes(chaos: Chaos, job_id: str, status: str) -> int:
    """Successful writes of `status` to one job's record that reached the store (counted by the sidecars)."""
    return sum(
        1
        for r in chaos.store_requests(job_id)
        if r["operation"] == "UpdateItem" and r["sets_status"] == status and r["http_status"] == 200
    )


def scheduler_fired_past(api: Corral, moment: float, *, allowance: float) -> None:
    """Wait until Scheduler has fired a one-time at() schedule due just after `moment` (epoch seconds) and
    its run has succeeded: Scheduler has swept past `moment`, and a firing it sent after that has run.
    The positive wait before asserting that a schedule did not fire by `moment`. `allowance`: the seconds
    a firing may take past its time to have run."""
    due = math.ceil(max(moment, time.time() + 3)) + 1  # an at() must be in the future when it is created
    name = f"fired-past-{uuid.uuid4().hex[:8]}"
    at = datetime.fromtimestamp(due, UTC)
    api.schedules.create(name, f"at({at:%Y-%m-%dT%H:%M:%S})", "echo", {"fired_past": moment})
    try:
        eventually(
            lambda: [run for run in api.schedules.get(name)["runs"] if run["status"] == "succeeded"],
            timeout=due - time.time() + allowance,
            message=f"the at() schedule {name} due at {at:%H:%M:%S} to fire and run",
        )
    finally:
        api.schedules.delete(name)


def one_running(api: Corral, job_ids: Iterable[str]) -> str | None:
    """The first of the jobs that is running, if one is: a condition for `eventually`."""
    return next((job_id for job_id in job_ids if api.get(job_id)["status"] == "running"), None)


def finished_jobs(api: Corral, job_ids: Iterable[str], *, timeout: float) -> dict[str, dict[str, Any]]:
    """Each job's view once all have finished (id -> job); a job seen finished is not asked for again."""
    wanted, done = list(job_ids), {}

    def all_finished() -> dict[str, dict[str, Any]]:
        for job_id in [job_id for job_id in wanted if job_id not in done]:
            if (job := api.get(job_id))["status"] in FINISHED:
                done[job_id] = job
        assert len(done) == len(wanted), f"{len(wanted) - len(done)} of {len(wanted)} unfinished"
        return done

    return eventually(all_finished, timeout=timeout, message=f"{len(wanted)} jobs to finish")


def cancelled_message_arrived(api: Corral, job_id: str, *, timeout: float) -> dict[str, Any]:
    """A job cancelled before it ran, once its message has arrived (after its delay) and the worker has
    acknowledged it unrun, recording its payload: the positive wait before asserting that it never ran."""

    def payload_recorded() -> dict[str, Any]:
        job = api.get(job_id)
        assert "payload" in job, job
        return job

    return eventually(payload_recorded, timeout=timeout, message=f"the cancelled job {job_id}'s message to arrive")


def every_copy_claimed(chaos: Chaos, job_id: str, copies: int, *, timeout: float = 60) -> None:
    """Wait until `copies` messages of one job have each reached its claim at the store, taken or refused
    (a duplicate's is refused): every copy sent has been handled, none is left to run. The positive wait
    before asserting that a duplicate did not run. The claims are counted by the embedded stack's sidecars."""

    def claimed() -> int:
        requests = chaos.store_requests(job_id)
        count = sum(1 for r in requests if r["operation"] == "UpdateItem" and r["sets_status"] == "running")
        assert count >= copies, f"{count} claims"
        return count

    eventually(claimed, timeout=timeout, message=f"a claim of job {job_id} by each of {copies} copies")


def job_message(job_id: str, **fields: object) -> dict:
    """A demo tenant's `echo` job message, as the API would send it (`fields` change or add to it)."""
    return {
        "v": 1,
        "id": job_id,
        "tenant": "demo",
        "type": "echo",
        "payload": {"marker": uuid.uuid4().hex},
        "max_attempts": 3,
        "enqueued_at": time.time(),
    } | fields


def dlq_bodies(deployed: Platform, job_id: str, timeout: float = 30) -> list[dict]:
    """DLQ messages of one job. The DLQ holds other tests' messages too, more than one receive returns:
    each message looked at is hidden for a few seconds so the next receive reaches the rest."""
    sqs = deployed.aws("sqs")
    url = deployed.queue_url(settings.DLQ_NAME)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        received = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=5, MessageAttributeNames=["All"]
        ).get("Messages", [])
        mine = [
            json.loads(m["Body"]) | {"_reason": m["MessageAttributes"]["corral-reason"]["StringValue"]}
            for m in received
            if _job_id_of(m["Body"]) == job_id
        ]
        if mine:
            return mine
        if not received:
            time.sleep(0.5)
    return []


def _job_id_of(body: str) -> str | None:
    try:
        found = json.loads(body)
    except ValueError:
        return None  # the DLQ also holds unreadable messages other tests sent
    return found.get("id") if isinstance(found, dict) else None
