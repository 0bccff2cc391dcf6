"""Child jobs (docs/decisions/durable-jobs.md "Child jobs") on moto: the worker's side of `run_job` and `run_jobs`
(shared/worker/run/children.py), a child's end resolving its parent's step (shared/waits/children.py), with the
jobs function's side the real one behind the stub Lambda client of test_worker.py.

A parent gets its child's result; three children's results come back in order, whatever order they end in; a
child that ends dead or cancelled raises ChildJobFailed in the parent, which may catch it; a step's child is sent
once however often the step is reached; and, the race, a child ending at any point of its parent's suspension
(before its record says `waiting`, between that and its last read, after) wakes the parent exactly then.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared import ids
from shared.control import cancel as control
from shared.durable.failures import ChildJobFailed
from shared.jobs.registry import JobContext, JobDead
from shared.model.message import JobMessage
from shared.model.outcome import Outcome
from shared.model.states import Status
from shared.store.id_secret import id_secret
from shared.store.jobs import job_store, waiting_jobs
from shared.tenants import quotas
from shared.waits import children, resume
from shared.worker.delivery import Delivery
from shared.worker.run import children as children_run
from tests.unit.durable.test_worker import DURABLE, FencedCode, fenced  # noqa: F401 (the fixture)
from tests.unit.worker_harness import RetryLater, receive, work

TENANT = "acme"


def _code(payload: Any, context: JobContext) -> Any:
    """One type for parents and children alike: a child's payload says what it does."""
    if isinstance(payload, dict) and "child" in payload:
        if payload["child"] == "die":
            raise JobDead("the child gave up")
        return {"doubled": payload["child"] * 2}
    match payload["parent"]:
        case "one":
            return {"got": context.run_job("render", DURABLE, {"child": 21})}
        case "three":
            return context.run_jobs("fan", [{"type": DURABLE, "payload": {"child": n}} for n in (1, 2, 3)])
        case "catches":
            try:
                context.run_job("risky", DURABLE, {"child": "die"}, max_attempts=1)
            except ChildJobFailed as failure:
                return {"handled": str(failure), "children": failure.children}
            return {"handled": None}
        case "uncaught":
            return context.run_job("risky", DURABLE, {"child": "die"}, max_attempts=1)
        case "unknown":
            return context.run_job("nope", "no_such_type")
    raise AssertionError(payload)


def _parent(kind: str) -> JobMessage:
    job_id = ids.timed_id(id_secret(), TENANT)
    return JobMessage(
        id=job_id, tenant=TENANT, type=DURABLE, payload={"parent": kind}, max_attempts=3, enqueued_at=time.time() - 1
    )


def _deliver(message: JobMessage, message_id: str | None = None) -> Outcome:
    return work(message, Delivery(message_id=message_id or f"m-{time.monotonic_ns()}", body=message.to_json()))


def _queued(aws: dict[str, Any]) -> list[JobMessage]:
    """Every message on the jobs queue (taken off it), as the worker would read it."""
    sqs = boto3.client("sqs")
    found: list[JobMessage] = []
    for _ in range(20):
        answer = sqs.receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, WaitTimeSeconds=0)
        messages = answer.get("Messages", [])
        if not messages:
            break
        for each in messages:
            found.append(JobMessage.from_body(each["Body"], sent_at=time.time(), secret=id_secret()))
            sqs.delete_message(QueueUrl=aws["queue_url"], ReceiptHandle=each["ReceiptHandle"])
    return found


def _record(job_id: str):
    return job_store.get(job_id, consistent=True)


@pytest.fixture
def parents(fenced: FencedCode) -> FencedCode:  # noqa: F811 (the fixture imported above)
    fenced.code = _code
    return fenced


def test_a_parent_waits_holding_nothing_and_gets_its_childs_result(parents, aws):
    parent = _parent("one")

    assert _deliver(parent) == Outcome.SUSPENDED
    waiting = _record(parent.id)
    assert (waiting.status, waiting.attempts) == (Status.WAITING, 0)
    (child,) = _queued(aws)
    shown = waiting.public()["waiting_for"]
    assert shown == {"kind": "job", "step": "render", "job_ids": [child.id]}
    assert child.id == ids.step_child_id(id_secret(), TENANT, parent.id, "render", 0)
    assert child.parent == {"kind": "step", "id": parent.id, "step": "render", "run": "0"}
    # Another message of the waiting parent runs nothing and sends nothing.
    assert _deliver(parent) == Outcome.DUPLICATE
    assert _queued(aws) == []

    assert _deliver(child) == Outcome.SUCCEEDED

    assert _record(parent.id).status is Status.QUEUED
    (wake,) = _queued(aws)
    assert wake.id == parent.id
    assert _deliver(wake) == Outcome.SUCCEEDED
    assert _record(parent.id).result == {"got": {"doubled": 42}}
    assert _record(child.id).public()["parent"]["id"] == parent.id


def test_run_jobs_answers_its_childrens_results_in_order_whatever_order_they_end_in(parents, aws):
    parent = _parent("three")
    assert _deliver(parent) == Outcome.SUSPENDED
    sent = _queued(aws)
    assert [each.payload for each in sent] == [{"child": 1}, {"child": 2}, {"child": 3}]
    assert _record(parent.id).public()["waiting_for"]["job_ids"] == [each.id for each in sent]

    for child in (sent[2], sent[0]):
        assert _deliver(child) == Outcome.SUCCEEDED
        assert _record(parent.id).status is Status.WAITING  # one still runs
    assert _deliver(sent[1]) == Outcome.SUCCEEDED

    (wake,) = _queued(aws)
    assert _deliver(wake) == Outcome.SUCCEEDED
    assert _record(parent.id).result == [{"doubled": 2}, {"doubled": 4}, {"doubled": 6}]


def test_a_dead_child_raises_in_its_parent_naming_it_and_the_parent_may_handle_it(parents, aws):
    parent = _parent("catches")
    assert _deliver(parent) == Outcome.SUSPENDED
    (child,) = _queued(aws)

    assert _deliver(child) == Outcome.DEAD
    (wake,) = _queued(aws)
    assert _deliver(wake) == Outcome.SUCCEEDED

    result = _record(parent.id).result
    assert child.id in result["handled"] and "the child gave up" in result["handled"]
    assert result["children"] == [{"id": child.id, "status": "dead", "error": result["children"][0]["error"]}]


def test_an_uncaught_child_failure_ends_the_parent_dead_naming_the_child(parents, aws):
    parent = _parent("uncaught")
    assert _deliver(parent) == Outcome.SUSPENDED
    (child,) = _queued(aws)
    assert _deliver(child) == Outcome.DEAD

    (wake,) = _queued(aws)
    assert _deliver(wake) == Outcome.DEAD
    record = _record(parent.id)
    assert record.status is Status.DEAD and child.id in (record.error or "")


def test_a_cancelled_child_resolves_its_parents_step_as_failed(parents, aws):
    parent = _parent("catches")
    assert _deliver(parent) == Outcome.SUSPENDED
    (child,) = _queued(aws)

    control.cancel(TENANT, child.id)
    assert _deliver(child) == Outcome.DUPLICATE  # its message arrives, the job cancelled: it tells the parent too

    woken = _queued(aws)
    assert [each.id for each in woken] == [parent.id]
    assert _deliver(woken[0]) == Outcome.SUCCEEDED
    assert _record(parent.id).result["children"][0]["status"] == "cancelled"


def test_a_child_no_worker_can_run_fails_its_parents_step(parents, aws):
    parent = _parent("catches")
    assert _deliver(parent) == Outcome.SUSPENDED
    (child,) = _queued(aws)
    gone = json.dumps({**child.to_dict(), "type": "type_removed_since"})  # its type gone by a deploy meanwhile

    assert receive(Delivery(message_id="m-gone", body=gone)) == Outcome.UNREADABLE

    (wake,) = _queued(aws)
    assert _deliver(wake) == Outcome.SUCCEEDED
    assert _record(parent.id).result["children"][0]["id"] == child.id


def test_a_child_no_enqueue_would_take_ends_the_parent_dead_naming_it(parents, aws):
    parent = _parent("unknown")

    assert _deliver(parent) == Outcome.DEAD

    assert "no_such_type" in (_record(parent.id).error or "")
    assert _queued(aws) == []


def test_a_cancelled_parent_is_never_resumed_by_its_child(parents, aws):
    parent = _parent("one")
    assert _deliver(parent) == Outcome.SUSPENDED
    (child,) = _queued(aws)

    control.cancel(TENANT, parent.id)
    assert _deliver(child) == Outcome.SUCCEEDED  # the child is a job of its own: it runs

    assert _record(parent.id).status is Status.CANCELLED
    assert _queued(aws) == []


# The race: a child's end against its parent's suspension --------------------------------------------------

# Where the parent's delivery may be when a child's end comes: the moment the worker has sent the children,
# before the completer records the parent `waiting`, between that and its last read of the step, after it all.
POINTS = ("sent", "before_suspend", "before_last_read", "after")
_REAL = (resume.wake, waiting_jobs.suspend, resume.wake_if_resolved, children_run.send)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["one", "three"]),
    resolve_at=st.sampled_from(POINTS),
    wake_after=st.sampled_from(POINTS),
    outcome=st.sampled_from([Status.SUCCEEDED, Status.DEAD]),
)
def test_a_child_ending_at_any_point_of_its_parents_suspension_wakes_it(
    parents, aws, monkeypatch, kind, resolve_at, wake_after, outcome
):
    """A child's end is two writes that matter: its parent's step resolved in the journal, then the parent's
    record flipped `queued` (and its wake sent). Each may come at any point of the parent's suspension (the
    flip never before the resolution); whichever, the parent is woken, and resumes with the children's end.
    Fails if the worker sends the children before it records the step waiting, or if the completer does not
    read the step once more after recording the parent `waiting`."""
    _queued(aws)
    wake_at = POINTS[max(POINTS.index(resolve_at), POINTS.index(wake_after))]
    real_wake, real_suspend, real_last_read, real_send = _REAL
    parent = _parent(kind)
    pending: dict[str, list[Any]] = {point: [] for point in POINTS}
    sent: list[JobMessage] = []

    def end_children() -> None:
        sent.extend(_queued(aws))
        for child in sent:
            _end(child, outcome)

    def deferred_wake(job_id: str, step: str) -> bool:
        pending[wake_at].append(lambda: real_wake(job_id, step))
        return True

    def run(point: str) -> None:
        while pending[point]:
            pending[point].pop(0)()

    def send(*args: Any, **kwargs: Any) -> list[str]:
        unsent = real_send(*args, **kwargs)
        pending[resolve_at].insert(0, end_children)
        run("sent")
        return unsent

    def suspend(*args: Any, **kwargs: Any) -> bool:
        run("before_suspend")
        return real_suspend(*args, **kwargs)

    def last_read(*args: Any, **kwargs: Any) -> bool:
        run("before_last_read")
        return real_last_read(*args, **kwargs)

    with monkeypatch.context() as patch:  # each example its own patches
        patch.setattr(children, "resume", SimpleNamespace(wake=deferred_wake))  # the child's wake alone
        patch.setattr(children_run, "send", send)
        patch.setattr(waiting_jobs, "suspend", suspend)
        patch.setattr(resume, "wake_if_resolved", last_read)
        assert _deliver(parent) == Outcome.SUSPENDED
        run("after")
        run("after")  # a resolution run at the end defers its own wake to the end too

    assert _record(parent.id).status is Status.QUEUED
    wakes = [each for each in _queued(aws) if each.id == parent.id]
    assert wakes  # one or two wake messages (a resolution and the last read may both wake it): the claim runs it once
    assert _deliver(wakes[0]) in (Outcome.SUCCEEDED, Outcome.DEAD)
    for extra in wakes[1:]:
        assert _deliver(extra) == Outcome.DUPLICATE
    record = _record(parent.id)
    if outcome is Status.SUCCEEDED:
        expected = {"got": {"doubled": 42}} if kind == "one" else [{"doubled": 2}, {"doubled": 4}, {"doubled": 6}]
        assert (record.status, record.result) == (Status.SUCCEEDED, expected)
    else:
        assert record.status is Status.DEAD and sent[0].id in (record.error or "")


def _end(child: JobMessage, outcome: Status) -> None:
    """The child runs to `outcome`: its own payload, or one that dies."""
    payload = {"child": "die"} if outcome is Status.DEAD else child.payload
    ran = JobMessage.from_dict({**child.to_dict(), "payload": payload})
    assert _deliver(ran) in (Outcome.SUCCEEDED, Outcome.DEAD)


# max_waiting_jobs ---------------------------------------------------------------------------------------


def test_a_job_that_would_wait_beyond_max_waiting_jobs_fails_its_attempt_naming_the_quota(parents, aws):
    quotas.set_limits(TENANT, max_waiting_jobs=1)
    first, second = _parent("one"), _parent("one")
    assert _deliver(first) == Outcome.SUSPENDED
    (child,) = _queued(aws)
    assert quotas.usage(TENANT)["waiting_jobs"] == 1

    with pytest.raises(RetryLater) as refused:
        _deliver(second)

    assert "max_waiting_jobs" in refused.value.reason
    record = _record(second.id)
    assert record.status is Status.FAILED and "max_waiting_jobs" in (record.error or "")
    assert _queued(aws) == []  # its child was not sent: it waits for nothing
    # The first parent's child ends: the parent resumes, and its unit comes back when its attempt starts.
    assert _deliver(child) == Outcome.SUCCEEDED
    (wake,) = _queued(aws)
    assert _deliver(wake) == Outcome.SUCCEEDED
    assert quotas.usage(TENANT)["waiting_jobs"] == 0
    assert _deliver(second) == Outcome.SUSPENDED  # its retry fits now
    assert quotas.usage(TENANT)["waiting_jobs"] == 1


def test_a_cancelled_waiting_job_gives_its_unit_back(parents, aws):
    parent = _parent("one")
    assert _deliver(parent) == Outcome.SUSPENDED
    assert quotas.usage(TENANT)["waiting_jobs"] == 1

    control.cancel(TENANT, parent.id)

    assert quotas.usage(TENANT)["waiting_jobs"] == 0


def test_a_short_wait_holds_no_unit(parents, aws):
    def naps(payload: Any, context: JobContext) -> Any:
        context.sleep("nap", 60)  # within SQS's delay: bounded by the rate limit already

    parents.code = naps
    assert _deliver(_parent("nap")) == Outcome.SUSPENDED
    assert quotas.usage(TENANT)["waiting_jobs"] == 0
