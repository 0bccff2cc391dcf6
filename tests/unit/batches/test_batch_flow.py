"""A batch's members with flow-control fields (moto): a debounced member joins its key's group like any job, and a
member superseded ends `skipped` naming the job that ran; a unique member whose key another job holds ends `skipped`
naming the holder. Either way the batch counts it `skipped`, completes once, and its callbacks run once each
(docs/decisions/batches.md). Refused before these were supported: the tests fail on a 422 there."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.batches import batches
from shared.model.states import Status
from shared.store.batches import batch_items
from shared.store.flow import debounce_items, unique_locks
from shared.store.jobs import job_store
from shared.tenants import tenants
from tests.unit.api_harness import answer as _api
from tests.unit.flow.test_debounce_jobs import _Clock, _drain
from tests.unit.worker_harness import dead_letters

EVERY_CALLBACK = {
    "on_complete": {"type": "echo", "payload": {"said": "complete"}},
    "on_success": {"type": "echo", "payload": {"said": "success"}},
}


def _debounced(n: int, key: str = "user-7") -> dict[str, Any]:
    return {"type": "echo", "payload": {"n": n}, "debounce": {"key": key, "period_seconds": 2}}


def _unique(n: int, key: str = "nightly", until: str = "started") -> dict[str, Any]:
    return {"type": "echo", "payload": {"n": n}, "unique": {"key": key, "until": until}}


def _clock(monkeypatch: Any) -> _Clock:
    """One clock for SQS, the API's enqueue and batches, and the worker's debounce."""
    clock = _Clock(time.time()).install(monkeypatch)
    monkeypatch.setattr(batches, "time", clock)
    return clock


def _members(created: dict[str, Any]) -> list[str]:
    return batches.member_ids("acme", batch_items.get(created["id"]))


def _callbacks_ran_once(shown: dict[str, Any]) -> None:
    for kind in ("on_complete", "on_success"):
        callback = job_store.get(shown["callbacks"][kind])
        assert callback is not None and callback.status is Status.SUCCEEDED
        assert callback.result["batch"]["skipped"] == shown["skipped"]


def test_debounced_members_supersede_each_other_in_order_and_the_batch_completes_counting_them_skipped(
    aws, monkeypatch
):
    clock = _clock(monkeypatch)
    key = tenants.create_key("acme")
    jobs = [_debounced(0), _debounced(1), {"type": "echo", "payload": "plain"}, _debounced(2)]
    status, created = _api("POST", "/v1/batches", key, {"jobs": jobs, **EVERY_CALLBACK})
    assert status == 201

    _drain(aws, clock, until=clock.now + 10)

    ids = _members(created)
    assert [job_store.get(job_id).status for job_id in ids] == [Status.SKIPPED, Status.SKIPPED] + [Status.SUCCEEDED] * 2
    assert job_store.get(ids[3]).result == {"n": 2}  # the last member of the key ran, with its payload
    for superseded in ids[:2]:
        status, view = _api("GET", f"/v1/jobs/{superseded}", key)
        assert (view["status"], view["attempts"], view["batch"]) == ("skipped", 0, created["id"])
        assert ids[3] in view["reason"]
    shown = _api("GET", f"/v1/batches/{created['id']}", key)[1]
    assert (shown["status"], shown["pending"], shown["succeeded"], shown["skipped"]) == ("succeeded", 0, 2, 2)
    _callbacks_ran_once(shown)  # a skipped member is no failure: on_success runs too
    assert dead_letters(aws) == []


def test_a_member_superseded_by_a_job_outside_its_batch_names_it_and_its_batch_still_completes(aws, monkeypatch):
    clock = _clock(monkeypatch)
    key = tenants.create_key("acme")
    created = _api("POST", "/v1/batches", key, {"jobs": [_debounced(0)], "on_complete": EVERY_CALLBACK["on_complete"]})
    later = _api("POST", "/v1/jobs", key, _debounced(1))[1]["id"]

    _drain(aws, clock, until=clock.now + 10)

    (member,) = _members(created[1])
    assert job_store.get(member).status is Status.SKIPPED and later in job_store.get(member).public()["reason"]
    assert job_store.get(later).status is Status.SUCCEEDED
    shown = _api("GET", f"/v1/batches/{created[1]['id']}", key)[1]
    assert (shown["status"], shown["skipped"], shown["pending"]) == ("succeeded", 1, 0)
    assert job_store.get(shown["callbacks"]["on_complete"]).status is Status.SUCCEEDED


def test_a_unique_member_whose_key_is_held_ends_skipped_naming_the_holder_and_counts_in_its_batch(aws, monkeypatch):
    clock = _clock(monkeypatch)
    key = tenants.create_key("acme")
    holder = _api("POST", "/v1/jobs", key, {**_unique(0), "delay_seconds": 5})[1]["id"]  # queued: it holds the key
    jobs = [_unique(1), _unique(2, key="weekly"), _unique(3, key="weekly")]
    status, created = _api("POST", "/v1/batches", key, {"jobs": jobs, **EVERY_CALLBACK})
    assert status == 201
    ids = _members(created)
    reasons = [job_store.get(job_id) for job_id in ids]
    assert reasons[0].status is Status.SKIPPED and holder in reasons[0].public()["reason"]
    assert reasons[1] is None  # it holds "weekly" now, sent
    assert reasons[2].status is Status.SKIPPED and ids[1] in reasons[2].public()["reason"]  # members meet in order
    assert unique_locks.read("acme", "weekly").holder == ids[1]

    _drain(aws, clock, until=clock.now + 10)

    assert [job_store.get(job_id).status for job_id in [holder, *ids]] == [
        Status.SUCCEEDED,
        Status.SKIPPED,
        Status.SUCCEEDED,
        Status.SKIPPED,
    ]
    shown = _api("GET", f"/v1/batches/{created['id']}", key)[1]
    assert (shown["status"], shown["succeeded"], shown["skipped"], shown["pending"]) == ("succeeded", 1, 2, 0)
    _callbacks_ran_once(shown)
    assert dead_letters(aws) == []


def test_a_batch_whose_send_fails_gives_back_its_members_keys_and_arrivals(aws, monkeypatch):
    key = tenants.create_key("acme")
    monkeypatch.setattr(batches.enqueue.queue, "send_batch", lambda messages: ["injected"] * len(messages))
    body = {"jobs": [_unique(0), _debounced(1)], "idempotency_key": "k1"}
    status, _ = _api("POST", "/v1/batches", key, body)

    assert status == 503
    assert unique_locks.read("acme", "nightly") is None
    assert debounce_items.read("acme", "user-7") is None


# A batch of members over a few debounce keys (some plain): whatever the order, each key's last member runs, every
# other member of a key ends skipped naming a later member of that key, and the batch completes once, counted.
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(st.sampled_from(["a", "b", None]), min_size=1, max_size=8))
def test_a_batchs_debounced_members_each_key_runs_its_last_and_the_counts_add_up(aws, monkeypatch, keys):
    clock = _clock(monkeypatch)
    api_key = tenants.create_key("acme")
    jobs = [_debounced(n, key) if key else {"type": "echo", "payload": {"n": n}} for n, key in enumerate(keys)]
    created = _api("POST", "/v1/batches", api_key, {"jobs": jobs, **EVERY_CALLBACK})[1]

    _drain(aws, clock, until=clock.now + 10)

    ids = _members(created)
    for index, key in enumerate(keys):
        record = job_store.get(ids[index])
        later = [ids[at] for at in range(index + 1, len(keys)) if keys[at] == key]
        if key is None or not later:
            assert record.status is Status.SUCCEEDED
        else:
            assert record.status is Status.SKIPPED and record.public()["reason"].split("job ")[1].split(" ")[0] in later
    shown = _api("GET", f"/v1/batches/{created['id']}", api_key)[1]
    skipped = sum(1 for index, key in enumerate(keys) if key and key in keys[index + 1 :])
    assert (shown["pending"], shown["skipped"], shown["succeeded"]) == (0, skipped, len(keys) - skipped)
    _callbacks_ran_once(shown)
    for group in ("a", "b"):  # the next example starts from no group
        aws["dynamodb"].delete_item(TableName=_table(), Key=_debounce_key(group))


def _table() -> str:
    from shared.store import table

    return table.name()


def _debounce_key(group: str) -> dict[str, Any]:
    from shared.store import keys

    return keys.item_key(keys.debounce_key("acme", group))
