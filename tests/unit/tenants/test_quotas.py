"""Per-tenant quotas against moto: exact counting under concurrency, every give-back path, limits and overrides."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from shared import settings
from shared.aws import eventbridge
from shared.control import cancel
from shared.errors import InvalidRequest, QuotaExceeded
from shared.jobs import enqueue, far_future
from shared.jobs.enqueue import JobRequest, NotSent
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.schedules import definitions, lifecycle, queries
from shared.store.jobs import job_claims
from shared.store.tenants import tenant_items
from shared.tenants import quotas
from shared.waits import triggers
from shared.worker.delivery import Delivery
from tests.unit import worker_harness
from tests.unit.worker_harness import receive

FAR = settings.MAX_SQS_DELAY_SECONDS + 3600


_FIRINGS_PER_HOUR = 1  # what a rate(1 hour) schedule weighs in the firings budget


def _schedule(name: str, timeout_seconds: int | None = None) -> definitions.ScheduleRequest:
    return definitions.ScheduleRequest(
        name=name, expression="rate(1 hour)", job=JobSpec("echo", payload=None, timeout_seconds=timeout_seconds)
    )


def _far_job(tenant: str = "acme", **options: Any) -> JobMessage:
    return enqueue.enqueue(
        tenant, JobRequest.from_fields({"type": "echo", "payload": {"later": True}, "delay_seconds": FAR, **options})
    )


def _scheduler_entries(env: dict[str, Any]) -> list[str]:
    return [entry["Name"] for entry in env["scheduler"].list_schedules(GroupName=settings.SCHEDULE_GROUP)["Schedules"]]


def _item(n: int) -> dict[str, Any]:
    return {"pk": {"S": f"test#{n}"}}


# Limits and overrides --------------------------------------------------------------------------------


def test_defaults_apply_until_an_operator_overrides_and_clearing_restores_them(aws):
    assert quotas.limits_for("acme") == quotas.DEFAULTS

    changed = quotas.set_limits("acme", max_schedules=5, enqueue_rate_per_second=2.5)

    assert (changed.max_schedules, changed.enqueue_rate_per_second) == (5, 2.5)
    assert quotas.limits_for("acme").max_schedules == 5  # set_limits forgets this instance's cached copy
    assert quotas.overrides_of("acme") == {"max_schedules": 5, "enqueue_rate_per_second": 2.5}
    assert quotas.limits_for("globex") == quotas.DEFAULTS
    cleared = quotas.set_limits("acme", max_schedules=None)
    assert cleared.max_schedules == settings.TENANT_MAX_SCHEDULES
    assert quotas.overrides_of("acme") == {"enqueue_rate_per_second": 2.5}


def test_a_store_blip_keeps_the_limits_in_hand_instead_of_failing_enqueues(aws, monkeypatch):
    from botocore.exceptions import EndpointConnectionError

    quotas.set_limits("acme", enqueue_rate_per_second=7.0)
    assert quotas.limits_for("acme").enqueue_rate_per_second == 7.0
    quotas._cached["acme"] = (quotas._cached["acme"][0], 0.0)  # its cache time ran out

    class Down:
        def get_item(self, **_kwargs):
            raise EndpointConnectionError(endpoint_url="http://dynamodb")

    monkeypatch.setattr(tenant_items, "client", lambda _service: Down())
    assert quotas.limits_for("acme").enqueue_rate_per_second == 7.0  # the last read, not an error
    quotas._rereads.wait()
    assert quotas.limits_for("acme").enqueue_rate_per_second == 7.0  # the failed re-read changed nothing
    assert quotas.limits_for("globex") == quotas.DEFAULTS  # never read here: the defaults
    monkeypatch.undo()
    quotas.set_limits("globex", enqueue_rate_per_second=3.0)
    quotas._cached["globex"] = (quotas.DEFAULTS, 0.0)  # as the failed first read left it
    assert quotas.limits_for("globex") == quotas.DEFAULTS  # answered at once, re-read in the background
    quotas._rereads.wait()
    assert quotas.limits_for("globex").enqueue_rate_per_second == 3.0


@pytest.mark.parametrize(
    "overrides",
    [{"max_schedules": -1}, {"max_schedules": 1.5}, {"enqueue_rate_per_second": 0}, {"no_such_limit": 3}],
)
def test_nonsense_overrides_are_refused_and_change_nothing(aws, overrides):
    with pytest.raises(ValueError):
        quotas.set_limits("acme", **overrides)
    assert quotas.overrides_of("acme") == {}


# Counting ---------------------------------------------------------------------------------------------


def test_units_are_taken_up_to_the_limit_and_the_refusal_names_quota_and_count(aws):
    quotas.set_limits("acme", max_schedules=2)
    assert quotas.take("acme", quotas.SCHEDULES, _item(1))
    assert quotas.take("acme", quotas.SCHEDULES, _item(2))

    with pytest.raises(QuotaExceeded) as refused:
        quotas.take("acme", quotas.SCHEDULES, _item(3))

    assert refused.value.retry_can_help
    assert refused.value.message == "schedule quota reached: 2 of 2 (max_schedules)"
    expected = {"schedules": 2, "far_future_jobs": 0, "firings_per_hour": 0, "triggers": 0, "waiting_jobs": 0}
    assert quotas.usage("acme") == expected
    assert quotas.usage("globex")["schedules"] == 0


def test_a_duplicate_item_takes_nothing(aws):
    assert quotas.take("acme", quotas.SCHEDULES, _item(1))
    assert not quotas.take("acme", quotas.SCHEDULES, _item(1))
    assert quotas.usage("acme")["schedules"] == 1


def test_a_give_back_counts_once_however_often_it_is_asked(aws):
    quotas.take("acme", quotas.SCHEDULES, _item(1))

    assert quotas.give_back("acme", quotas.SCHEDULES, _item(1))
    assert not quotas.give_back("acme", quotas.SCHEDULES, _item(1))
    assert quotas.usage("acme")["schedules"] == 0


def test_a_limit_of_zero_is_a_refusal_no_retry_helps(aws):
    quotas.set_limits("acme", max_far_future_jobs=0)
    with pytest.raises(QuotaExceeded) as refused:
        quotas.take("acme", quotas.FAR_FUTURE_JOBS, _item(1))
    assert not refused.value.retry_can_help
    assert "far-future job quota reached: 0 of 0 (max_far_future_jobs)" in refused.value.message


@pytest.fixture
def serializable_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB runs each request, a transaction included, atomically; moto's in-memory table does not
    when threads call it at once (a failed transaction's rollback can undo another thread's write). A lock
    per request gives moto DynamoDB's guarantee, and nothing more: the threads still race through botocore
    and through the code under test, and the conditions decide who wins."""
    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()
    for name in ("transact_write_items", "update_item", "put_item", "delete_item", "get_item"):
        original = getattr(DynamoDBBackend, name)

        def locked(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            with lock:
                return _original(self, *args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, locked)


def test_racing_threads_never_take_more_than_the_limit(aws, serializable_moto):
    """32 requests race for the last 5 units (limit 20, 15 held): exactly 5 win, the counter says 20."""
    quotas.set_limits("acme", max_schedules=20)
    for n in range(15):
        quotas.take("acme", quotas.SCHEDULES, _item(n))
    start = threading.Barrier(32)

    def contender(n: int) -> bool:
        start.wait(timeout=10)
        try:
            return quotas.take("acme", quotas.SCHEDULES, _item(100 + n))
        except QuotaExceeded:
            return False

    with ThreadPoolExecutor(max_workers=32) as pool:
        won = list(pool.map(contender, range(32)))

    assert sum(won) == 5
    assert quotas.usage("acme")["schedules"] == 20
    held = aws["dynamodb"].scan(
        TableName=settings.TABLE_NAME,
        FilterExpression="begins_with(pk, :p)",
        ExpressionAttributeValues={":p": {"S": "test#"}},
    )["Items"]
    assert len(held) == 20


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    limit=st.integers(min_value=0, max_value=4),
    steps=st.lists(st.tuples(st.sampled_from(["take", "give_back"]), st.integers(0, 5)), max_size=20),
)
def test_the_counter_is_always_the_number_of_items_held_and_never_over_the_limit(aws, limit, steps):
    tenant = f"t{abs(hash((limit, tuple(steps))))}"  # each example its own tenant: moto's table persists
    quotas.set_limits(tenant, max_far_future_jobs=limit)
    held: set[int] = set()
    for action, n in steps:
        key = {"pk": {"S": f"{tenant}#{n}"}}
        if action == "take":
            try:
                if quotas.take(tenant, quotas.FAR_FUTURE_JOBS, key):
                    held.add(n)
            except QuotaExceeded as refused:
                assert len(held) >= limit
                assert refused.count == len(held)
        elif quotas.give_back(tenant, quotas.FAR_FUTURE_JOBS, key):
            held.remove(n)
        assert quotas.usage(tenant)["far_future_jobs"] == len(held) <= max(limit, 0)


# Schedules ---------------------------------------------------------------------------------------------


def test_schedules_are_refused_at_the_quota_and_a_delete_gives_the_unit_back(scheduler_env):
    quotas.set_limits("acme", max_schedules=2)
    lifecycle.create("acme", _schedule("a"))
    lifecycle.create("acme", _schedule("b"))

    with pytest.raises(QuotaExceeded, match=r"schedule quota reached: 2 of 2 \(max_schedules\)"):
        lifecycle.create("acme", _schedule("c"))
    assert len(_scheduler_entries(scheduler_env)) == 2  # nothing created in Scheduler

    lifecycle.delete("acme", "a")
    lifecycle.create("acme", _schedule("c"))
    assert quotas.usage("acme")["schedules"] == 2
    lifecycle.create("globex", _schedule("a"))  # another tenant's quota is its own


def test_a_taken_name_takes_no_unit(scheduler_env):
    lifecycle.create("acme", _schedule("a"))
    with pytest.raises(lifecycle.ScheduleExists):
        lifecycle.create("acme", _schedule("a"))
    assert quotas.usage("acme")["schedules"] == 1


def test_a_schedule_scheduler_refuses_gives_its_unit_back(scheduler_env, monkeypatch):
    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise eventbridge.Rejected("expression", "ValidationException: nope")

    monkeypatch.setattr(eventbridge, "create_schedule", refuse)
    with pytest.raises(InvalidRequest):
        lifecycle.create("acme", _schedule("a"))
    assert quotas.usage("acme")["schedules"] == 0
    assert queries.get("acme", "a") is None


def test_a_schedule_carries_its_job_timeout_into_every_firing(scheduler_env):
    created = lifecycle.create("acme", _schedule("a", timeout_seconds=42))

    entry = scheduler_env["scheduler"].get_schedule(
        Name=lifecycle.scheduler_name("acme", "a"), GroupName=settings.SCHEDULE_GROUP
    )
    assert json.loads(entry["Target"]["Input"])["timeout_seconds"] == 42
    assert created.public()["job"]["timeout_seconds"] == 42
    firing = JobMessage.from_body(
        entry["Target"]["Input"].replace("<aws.scheduler.scheduled-time>", "2030-01-01T00:00:00Z"),
        sent_at=1_900_000_000,
        secret=b"x" * 32,
    )
    assert firing.timeout_seconds == 42


def test_a_schedule_timeout_beyond_its_type_is_refused(scheduler_env):
    with pytest.raises(InvalidRequest) as refused:
        lifecycle.create("acme", _schedule("a", timeout_seconds=settings.MAX_JOB_TIMEOUT_SECONDS + 1))
    assert refused.value.field == "job.timeout_seconds"
    assert quotas.usage("acme")["schedules"] == 0


# Pagination --------------------------------------------------------------------------------------------


def test_schedules_are_listed_a_page_at_a_time_by_name(scheduler_env):
    names = [f"s{n:02d}" for n in range(7)]
    for name in reversed(names):
        lifecycle.create("acme", _schedule(name))
    lifecycle.create("globex", _schedule("other"))

    seen: list[str] = []
    cursor: str | None = None
    for _ in range(10):  # bounded: 7 schedules in pages of 3
        page = queries.list_page("acme", limit=3, cursor=cursor)
        seen += [item.name for item in page.schedules]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == names


@pytest.mark.parametrize("cursor", ["nonsense", "czE6YS9i", "", "czI6YQ"])
def test_a_cursor_the_api_did_not_return_is_refused_naming_the_field(scheduler_env, cursor):
    with pytest.raises(InvalidRequest) as refused:
        queries.list_page("acme", cursor=cursor or "x")
    assert refused.value.field == "cursor"


# Far-future jobs ---------------------------------------------------------------------------------------


def test_far_future_jobs_are_refused_at_the_quota_and_near_ones_are_not_counted(scheduler_env):
    quotas.set_limits("acme", max_far_future_jobs=2)
    _far_job()
    _far_job()
    enqueue.enqueue("acme", JobRequest(JobSpec("echo"), delay_seconds=60))  # SQS's own delay: no schedule, no unit

    with pytest.raises(QuotaExceeded, match=r"far-future job quota reached: 2 of 2 \(max_far_future_jobs\)"):
        _far_job()
    assert len(_scheduler_entries(scheduler_env)) == 2


def test_one_idempotency_key_holds_one_unit(scheduler_env):
    first = _far_job(idempotency_key="k1")
    again = _far_job(idempotency_key="k1")
    assert first.id == again.id
    assert quotas.usage("acme")["far_future_jobs"] == 1


def test_a_batch_past_the_quota_says_per_job_which_were_refused(scheduler_env):
    quotas.set_limits("acme", max_far_future_jobs=2)
    requests = [JobRequest(JobSpec("echo", payload=n), delay_seconds=FAR if n % 2 == 0 else 0) for n in range(8)]

    outcomes = enqueue.enqueue_many("acme", requests)

    far = [outcome for outcome, request in zip(outcomes, requests, strict=True) if request.delay_seconds]
    assert [type(outcome) for outcome in far] == [JobMessage, JobMessage, QuotaExceeded, QuotaExceeded]
    assert all(isinstance(outcome, JobMessage) for outcome in outcomes[1::2])  # the near jobs all went
    assert quotas.usage("acme")["far_future_jobs"] == 2
    assert len(_scheduler_entries(scheduler_env)) == 2


def test_a_far_future_job_that_cannot_be_scheduled_gives_its_unit_back(scheduler_env, monkeypatch):
    from botocore.exceptions import ClientError

    def outage(*_args: Any, **_kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "CreateSchedule")

    monkeypatch.setattr(enqueue.eventbridge, "create", outage)
    outcomes = enqueue.enqueue_many("acme", [JobRequest(JobSpec("echo"), delay_seconds=FAR)])
    assert isinstance(outcomes[0], NotSent)
    assert quotas.usage("acme")["far_future_jobs"] == 0


def _firing(env: dict[str, Any], message: JobMessage) -> str:
    """What the job's one-time schedule puts on the queue when it is due."""
    entry = env["scheduler"].get_schedule(Name=f"d-{message.id}", GroupName=settings.SCHEDULE_GROUP)
    return entry["Target"]["Input"]


def test_a_far_future_job_gives_its_unit_back_when_it_arrives_once_however_often(scheduler_env):
    message = _far_job(idempotency_key="from-the-sdk")  # a keyed id carries no due time: the message says it
    assert quotas.usage("acme")["far_future_jobs"] == 1
    firing = _firing(scheduler_env, message)
    assert json.loads(firing)["due_at"] > message.enqueued_at + settings.MAX_SQS_DELAY_SECONDS

    worker_harness.deliver(scheduler_env, firing)
    assert quotas.usage("acme")["far_future_jobs"] == 0
    assert worker_harness.record(message.id).status == "succeeded"
    worker_harness.deliver(scheduler_env, firing)  # a duplicate delivery
    assert quotas.usage("acme")["far_future_jobs"] == 0


def test_a_cancelled_far_future_job_gives_its_unit_back_once_even_if_it_fires_too(scheduler_env):
    message = _far_job()
    other = _far_job()
    firing = _firing(scheduler_env, message)

    cancel.cancel("acme", message.id)
    assert quotas.usage("acme")["far_future_jobs"] == 1
    worker_harness.deliver(scheduler_env, firing)  # a firing already under way when the schedule was deleted
    cancel.cancel("acme", message.id)  # cancelled again: idempotent
    assert quotas.usage("acme")["far_future_jobs"] == 1  # only `other` holds one
    assert far_future.held("acme")[0]["job_id"] == other.id


def test_a_far_future_job_arriving_in_a_store_blip_runs_at_once_and_its_outcome_gives_the_unit_back(
    scheduler_env, monkeypatch
):
    from botocore.exceptions import ClientError

    from functions.worker.handler import worker
    from shared.worker.complete import completer

    monkeypatch.setattr(completer, "OUTCOME_DELAY_SECONDS", 0)
    message = _far_job()
    firing = _firing(scheduler_env, message)
    down = [True]

    def failing_when_down(function: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if down[0]:
                raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "TransactWriteItems")
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(quotas, "give_back", failing_when_down(quotas.give_back))
    monkeypatch.setattr(job_claims, "claim", failing_when_down(job_claims.claim))

    assert worker_harness.deliver(scheduler_env, firing).failed == []  # ran unclaimed, not handed back
    assert quotas.usage("acme")["far_future_jobs"] == 1  # the store is down: the unit is still taken
    down[0] = False
    worker.breaker.down_until = 0.0  # the cooldown has passed
    assert worker_harness.poll(scheduler_env).failed == []  # the outcome message: recorded, unit given back

    assert worker_harness.record(message.id).status == "succeeded"
    assert quotas.usage("acme")["far_future_jobs"] == 0
    assert far_future.held("acme") == []


def test_only_far_future_messages_cost_the_worker_a_write(scheduler_env, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(far_future, "release", lambda tenant, job_id, **_: calls.append(job_id) or True)
    near = enqueue.enqueue("acme", JobRequest(JobSpec("echo"), delay_seconds=60))
    far = _far_job()
    for message_id, body in ((near.id, near.to_json()), (far.id, _firing(scheduler_env, far))):
        receive(Delivery(message_id=message_id, body=body))
    assert calls == [far.id]


# Recount ------------------------------------------------------------------------------------------------


def test_a_recount_restores_counters_from_the_items_and_drops_holds_of_lost_firings(scheduler_env):
    from shared.operations import recount

    lifecycle.create("acme", _schedule("a"))
    lifecycle.create("acme", _schedule("b"))
    lost = _far_job()
    kept = _far_job()
    # A firing Scheduler gave up on: its schedule is gone (deleted after completion), its message never arrived.
    scheduler_env["scheduler"].delete_schedule(Name=f"d-{lost.id}", GroupName=settings.SCHEDULE_GROUP)
    triggers.create("acme", "on-paid", "paid", None, {"type": "echo"})
    quotas.set_usage("acme", {"schedules": 9, "far_future_jobs": 0, "firings_per_hour": 500, "triggers": 3})  # drifted

    done = recount.recount("acme", prune=True, now=lost.enqueued_at + FAR + recount.STALE_AFTER_SECONDS + 1)

    assert done.before == {
        "schedules": 9,
        "far_future_jobs": 0,
        "firings_per_hour": 500,
        "triggers": 3,
        "waiting_jobs": 0,
    }
    hourly = 2 * _FIRINGS_PER_HOUR  # what the two schedules weigh
    after = {"schedules": 2, "far_future_jobs": 1, "firings_per_hour": hourly, "triggers": 1, "waiting_jobs": 0}
    assert done.after == after == quotas.usage("acme")
    assert done.pruned == [lost.id]
    assert [hold["job_id"] for hold in far_future.held("acme")] == [kept.id]


def test_a_first_read_of_a_tenants_limits_makes_one_attempt_and_falls_back_to_the_defaults(aws, monkeypatch):
    # Retried through a store blip, this read held a worker's batch (and an enqueue) for seconds.
    attempts: list[str] = []

    class Throttled:
        def get_item(self, **_: object) -> None:
            attempts.append("get_item")
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "GetItem")

    monkeypatch.setattr(tenant_items, "single_attempt_client", lambda service: Throttled())
    monkeypatch.setattr(tenant_items, "client", lambda service: pytest.fail("a retrying client on the first read"))

    assert quotas.limits_for("never-read-here") == quotas.DEFAULTS
    assert attempts == ["get_item"]
