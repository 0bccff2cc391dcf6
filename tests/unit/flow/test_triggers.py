"""Event triggers (docs/decisions/triggers.md) on moto: the pure rules (the merge, the names, the started job's id),
the store's items and the quota, and events run through the real worker handler: each event starts one job per
matching trigger, once per event id, never another tenant's, and none lost when a send fails midway."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared import ids
from shared.durable import matching
from shared.errors import InvalidRequest, QuotaExceeded, Unavailable
from shared.flow import triggers as rules
from shared.model.message import JobMessage, UnreadableMessage
from shared.model.states import Status
from shared.store.flow import trigger_items
from shared.store.id_secret import id_secret
from shared.tenants import quotas
from shared.waits import sending, triggers
from tests.unit.worker_harness import VirtualClock, messages_held, poll, record

_JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_OBJECTS = st.dictionaries(st.text(max_size=6), _JSON, max_size=4)


# The pure rules ---------------------------------------------------------------------------------------------------


@given(payload=st.none() | _OBJECTS, data=_JSON)
def test_the_events_data_is_laid_over_the_triggers_payload_its_keys_winning(payload, data):
    merged = rules.merged_payload(payload, data)

    if data is None:
        assert merged == payload
    elif isinstance(data, dict):
        assert merged == {**(payload or {}), **data}
        assert all(merged[key] == value for key, value in data.items())
    else:
        assert merged == {**(payload or {}), rules.DATA_KEY: data}
    assert payload is None or payload == (payload and dict(payload))  # the trigger's own payload is not changed


@given(data=_OBJECTS, chosen=st.data())
def test_a_match_taken_from_the_data_holds_and_fails_once_one_of_its_keys_is_missing(data, chosen):
    keys = chosen.draw(st.lists(st.sampled_from(sorted(data)), unique=True) if data else st.just([]))
    match = {key: data[key] for key in keys}

    assert matching.matches(match, data)
    for key in keys:
        assert not matching.matches(match, {name: value for name, value in data.items() if name != key})
    assert matching.matches(match, None) is (not match)


@given(event_id=st.text(min_size=1, max_size=20), trigger=st.from_regex(rules.NAME, fullmatch=True))
@settings(max_examples=50)
def test_a_started_jobs_id_is_one_per_event_id_and_trigger_and_verifies_for_its_tenant(event_id, trigger):
    secret = b"s" * 32
    job_id = rules.started_job_id(secret, "acme", event_id, trigger)

    assert job_id == rules.started_job_id(secret, "acme", event_id, trigger)
    assert job_id != rules.started_job_id(secret, "acme", event_id + "x", trigger)
    assert job_id != rules.started_job_id(secret, "acme", event_id, trigger + "x")
    assert ids.verify(secret, "acme", job_id) is not None
    assert ids.verify(secret, "globex", job_id) is None


@pytest.mark.parametrize(
    ("name", "field"),
    [("", "name"), ("has space", "name"), ("x" * 65, "name"), ("a/b", "name"), (7, "name")],
)
def test_a_bad_trigger_name_is_refused_naming_it(name, field):
    with pytest.raises(InvalidRequest) as refused:
        rules.checked_name(name)
    assert refused.value.field == field


# The store and the lifecycle --------------------------------------------------------------------------------------


def _create(name: str = "paid", event: str = "payment.received", match: Any = None, **job: Any) -> dict[str, Any]:
    return triggers.create("acme", name, event, match, {"type": "echo", **job})


def test_a_trigger_is_created_listed_read_and_deleted_and_its_quota_unit_comes_back(aws):
    created = _create(match={"plan": "pro"}, payload={"source": "trigger"})

    assert created["name"] == "paid" and created["match"] == {"plan": "pro"}
    assert triggers.get("acme", "paid") == created
    assert triggers.list_page("acme").triggers == [created]
    assert quotas.usage("acme")[quotas.TRIGGERS.counter] == 1
    assert [trigger["name"] for trigger in trigger_items.on_event("acme", "payment.received")] == ["paid"]

    triggers.delete("acme", "paid")

    assert triggers.list_page("acme").triggers == []
    assert quotas.usage("acme")[quotas.TRIGGERS.counter] == 0
    assert trigger_items.on_event("acme", "payment.received") == []
    with pytest.raises(triggers.TriggerNotFound):
        triggers.get("acme", "paid")
    with pytest.raises(triggers.TriggerNotFound):
        triggers.delete("acme", "paid")


def test_a_name_taken_is_a_conflict_and_changes_nothing(aws):
    first = _create(payload={"n": 1})

    with pytest.raises(triggers.TriggerExists):
        _create(event="refund.issued", payload={"n": 2})

    assert triggers.get("acme", "paid") == first
    assert quotas.usage("acme")[quotas.TRIGGERS.counter] == 1
    assert trigger_items.on_event("acme", "refund.issued") == []  # a name listed there finds no trigger of its


def test_max_triggers_refuses_the_one_over_and_keeps_nothing_of_it(aws):
    quotas.set_limits("acme", max_triggers=2)
    _create("one")
    _create("two")

    with pytest.raises(QuotaExceeded, match=r"trigger quota reached: 2 of 2 \(max_triggers\)"):
        _create("three")

    assert [trigger["name"] for trigger in triggers.list_page("acme").triggers] == ["one", "two"]
    assert [trigger["name"] for trigger in trigger_items.on_event("acme", "payment.received")] == ["one", "two"]


def test_the_listing_pages_by_name_with_a_cursor(aws):
    for name in ("c", "a", "e", "b", "d"):
        _create(name)

    seen, cursor = [], None
    for _ in range(5):
        page = triggers.list_page("acme", limit=2, cursor=cursor)
        seen += [trigger["name"] for trigger in page.triggers]
        cursor = page.next_cursor
        if cursor is None:
            break

    assert seen == ["a", "b", "c", "d", "e"]
    with pytest.raises(InvalidRequest) as refused:
        triggers.list_page("acme", cursor="not-a-cursor")
    assert refused.value.field == "cursor"


@pytest.mark.parametrize(
    ("name", "event", "match", "job", "field"),
    [
        ("bad name", "e", None, {"type": "echo"}, "name"),
        ("t", "", None, {"type": "echo"}, "event"),
        ("t", "e" * 257, None, {"type": "echo"}, "event"),
        ("t", "e", ["not", "an", "object"], {"type": "echo"}, "match"),
        ("t", "e", None, {"type": "no_such_type"}, "job.type"),
        ("t", "e", None, {"type": "echo", "payload": [1]}, "job.payload"),
        ("t", "e", None, {"type": "echo", "idempotency_key": "k"}, "job.idempotency_key"),
        ("t", "e", None, {"type": "echo", "run_at": "2030-01-01T00:00:00Z"}, "job.run_at"),
        ("t", "e", None, {"type": "echo", "unique": {"key": "k"}}, "job.unique"),
        ("t", "e", None, {"type": "echo", "delay_seconds": 901}, "job.delay_seconds"),
        ("t", "e", None, {"type": "echo", "max_attempts": 0}, "job.max_attempts"),
        ("t", "e", None, {"type": "sleep", "payload": {"seconds": -1}}, "job.payload.seconds"),
        ("t", "e", None, {"type": "echo", "colour": "red"}, "job.colour"),
    ],
)
def test_bad_input_is_refused_naming_its_field_and_nothing_is_created(aws, name, event, match, job, field):
    with pytest.raises(InvalidRequest) as refused:
        triggers.create("acme", name, event, match, job)

    assert refused.value.field == field
    assert triggers.list_page("acme").triggers == []
    assert quotas.usage("acme")[quotas.TRIGGERS.counter] == 0


@pytest.mark.parametrize("create_put_lands", ["before the delete's unlist", "after the delete's unlist"])
def test_a_create_racing_a_delete_of_the_name_leaves_the_trigger_in_its_directory(aws, monkeypatch, create_put_lands):
    """The delete has removed the trigger; a create of the name on the same event lists it, then the delete
    unlists the name, and the create's put lands either before or after that unlist. Either way the event must
    still find the new trigger: the create lists it again after its put, and the delete re-reads after its unlist."""
    _create()
    real_list, real_unlist = trigger_items.list_in_directory, trigger_items.unlist_from_directory

    def create_again() -> None:
        triggers.create("acme", "paid", "payment.received", None, {"type": "echo", "payload": {"again": True}})

    def unlist_racing(tenant: str, event: str, name: str) -> None:
        monkeypatch.setattr(trigger_items, "unlist_from_directory", real_unlist)
        real_list(tenant, event, name)  # the create's first list, before the unlist
        if create_put_lands == "before the delete's unlist":
            create_again()
            real_unlist(tenant, event, name)
            return
        real_unlist(tenant, event, name)
        skipped = iter([True])  # its first list was done above
        monkeypatch.setattr(
            trigger_items, "list_in_directory", lambda *args: None if next(skipped, False) else real_list(*args)
        )
        create_again()

    monkeypatch.setattr(trigger_items, "unlist_from_directory", unlist_racing)
    triggers.delete("acme", "paid")

    assert [trigger["job"]["payload"] for trigger in trigger_items.on_event("acme", "payment.received")] == [
        {"again": True}
    ]


# Events through the worker ---------------------------------------------------------------------------------------


def _drain(aws: dict[str, Any], clock: VirtualClock | None = None) -> None:
    """Poll the jobs queue until it holds nothing (bounded): the event's job, then the jobs it started."""
    for _ in range(40):
        if messages_held(aws) == 0:
            return
        if poll(aws) is None and clock is not None:
            clock.now += 120  # a retry's backoff, or a delay, passes
    raise AssertionError("the queue did not drain")


def _started(tenant: str, event_id: str, trigger: str) -> Any:
    return record(rules.started_job_id(id_secret(), tenant, event_id, trigger))


def _event_result(tenant: str, event_id: str) -> dict[str, Any]:
    found = record(ids.keyed_id(id_secret(), tenant, rules.event_job_key(event_id)))
    assert found is not None and found.status is Status.SUCCEEDED, found
    return found.result


def test_an_event_sent_twice_starts_one_job_per_matching_trigger_with_the_merged_payload(aws):
    _create("pro-paid", match={"plan": "pro"}, payload={"source": "trigger", "plan": "unset"})
    _create("any-paid", payload={"n": 1})
    _create("refunds", event="refund.issued")

    for _ in range(2):
        sending.send("acme", "payment.received", {"plan": "pro", "order": 7}, "pay-7")
    _drain(aws)

    pro, any_paid = _started("acme", "pay-7", "pro-paid"), _started("acme", "pay-7", "any-paid")
    assert pro.status is Status.SUCCEEDED and pro.result == {"source": "trigger", "plan": "pro", "order": 7}
    assert any_paid.result == {"n": 1, "plan": "pro", "order": 7}
    assert pro.public()["started_by"] == {"trigger": "pro-paid", "event": "pay-7"}
    assert _started("acme", "pay-7", "refunds") is None
    assert sorted(_event_result("acme", "pay-7")["started"]) == sorted([pro.id, any_paid.id])
    assert pro.attempts == 1 and any_paid.attempts == 1  # each ran once, however often the event came

    sending.send("acme", "payment.received", {"plan": "basic"}, "pay-8")  # matches "any-paid" only
    sending.send("acme", "payment.received", None, "pay-9")  # no data: no plan to match
    _drain(aws)

    assert _started("acme", "pay-8", "pro-paid") is None and _started("acme", "pay-8", "any-paid") is not None
    assert _event_result("acme", "pay-9")["started"] == [_started("acme", "pay-9", "any-paid").id]
    assert _started("acme", "pay-9", "any-paid").result == {"n": 1}


def test_another_tenants_event_starts_none_of_this_tenants_triggers(aws):
    _create("any-paid")

    sending.send("globex", "payment.received", {"plan": "pro"}, "pay-7")
    _drain(aws)

    assert _event_result("globex", "pay-7")["started"] == []
    assert _started("acme", "pay-7", "any-paid") is None
    assert _started("globex", "pay-7", "any-paid") is None


def test_a_send_that_fails_midway_fails_the_events_job_and_its_retry_starts_every_job_once(aws, monkeypatch):
    clock = VirtualClock(time.time()).install(monkeypatch)
    for name in ("a", "b", "c"):
        _create(name)
    real_send_batch = triggers.queue.send_batch
    failures = iter([True])

    def second_lost_once(messages):
        problems = real_send_batch(messages)
        lost = ["lost" if index == 1 and next(failures, False) else None for index in range(len(problems))]
        return [problem or lost_one for problem, lost_one in zip(problems, lost, strict=True)]

    monkeypatch.setattr(triggers.queue, "send_batch", second_lost_once)
    sending.send("acme", "payment.received", {"order": 1}, "pay-1")
    _drain(aws, clock)

    started = [_started("acme", "pay-1", name) for name in ("a", "b", "c")]
    assert all(job is not None and job.status is Status.SUCCEEDED and job.attempts == 1 for job in started)
    assert _event_result("acme", "pay-1")["started"] == [job.id for job in started]
    event_job = record(ids.keyed_id(id_secret(), "acme", rules.event_job_key("pay-1")))
    assert event_job.attempts == 2  # the first attempt failed on the lost send


def test_a_trigger_whose_merged_payload_fails_its_types_check_starts_nothing_and_the_event_says_why(aws):
    triggers.create("acme", "nap", "payment.received", None, {"type": "sleep", "payload": {"seconds": 0}})

    sending.send("acme", "payment.received", {"seconds": "soon"}, "pay-2")
    _drain(aws)

    result = _event_result("acme", "pay-2")
    assert result["started"] == []
    assert result["not_started"] == [
        {"trigger": "nap", "field": "job.payload.seconds", "message": result["not_started"][0]["message"]}
    ]
    assert _started("acme", "pay-2", "nap") is None


def test_a_message_naming_a_trigger_and_event_its_id_does_not_come_from_is_forged(aws):
    secret = id_secret()
    job_id = rules.started_job_id(secret, "acme", "pay-1", "a")
    fields = {"type": "echo", "payload": None, "max_attempts": 1, "enqueued_at": time.time()}

    honest = JobMessage.from_data(
        {"id": job_id, "tenant": "acme", **fields, "started_by": {"trigger": "a", "event": "pay-1"}},
        sent_at=time.time(),
        secret=secret,
    )
    assert honest.started_by == {"trigger": "a", "event": "pay-1"}
    with pytest.raises(UnreadableMessage, match="started_by"):
        JobMessage.from_data(
            {"id": job_id, "tenant": "acme", **fields, "started_by": {"trigger": "b", "event": "pay-1"}},
            sent_at=time.time(),
            secret=secret,
        )


_MATCHES = st.dictionaries(st.text(max_size=4), _JSON_SCALARS, max_size=3)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_OBJECTS, match=_MATCHES, holds_it=st.booleans())
def test_on_event_the_started_jobs_are_exactly_the_matching_triggers(aws, data, match, holds_it):
    data = {**data, **match} if holds_it else data
    for trigger in trigger_items.on_event("acme", "e"):
        triggers.delete("acme", trigger["name"])
    triggers.create("acme", "with-match", "e", match, {"type": "echo"})
    triggers.create("acme", "no-match", "e", None, {"type": "echo"})
    sent: list[list[str]] = []
    real_send_batch = triggers.queue.send_batch
    try:
        triggers.queue.send_batch = lambda messages: sent.append([m.id for m, _ in messages]) or [None] * len(messages)
        started = triggers.start_jobs("acme", {"name": "e", "id": "x", "data": data}, time.time())
    finally:
        triggers.queue.send_batch = real_send_batch
    expected = {"no-match"} | ({"with-match"} if matching.matches(match, data) else set())
    assert {rules.started_job_id(id_secret(), "acme", "x", name) for name in expected} == set(started.jobs)
    assert sent == [started.jobs]


def test_unread_triggers_after_every_try_fail_the_event_rather_than_start_fewer(aws, monkeypatch):
    _create()
    real = trigger_items.client

    class Throttled:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def batch_get_item(self, RequestItems):
            return {"Responses": {}, "UnprocessedKeys": RequestItems}

    monkeypatch.setattr(trigger_items, "client", lambda service: Throttled(real(service)))
    with pytest.raises(Unavailable):
        trigger_items.on_event("acme", "payment.received")
