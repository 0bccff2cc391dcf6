"""The example order flow (examples/jobs/orders.py) played through the jobs function's side and the store on
moto, with the worker's side as tests/unit/durable_harness.py plays it: the payment arrives, it never does,
and it arrives between the reservation and the wait's registration (the race every such flow meets)."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from shared.durable import steps
from shared.durable.steps import StepKind
from shared.store.durable import event_items
from tests.unit.durable_harness import DurableJob, example_type


@pytest.fixture
def orders(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return example_type(monkeypatch, "examples.jobs.orders", "order_flow")


def test_the_payment_arrives_and_the_order_is_charged_once(aws, orders):
    job = DurableJob("order_flow", {"order": "o-1", "items": 2}, job_id="jt-order-1")
    answer = job.attempt_once()
    assert answer.suspend == {
        "kind": "wait_for_event",
        "step": "payment",
        "name": "payment.received",
        "match": {"order": "o-1"},
        "timeout_seconds": 3600,
    }
    waiter = event_items.Waiter(job.job_id, "payment", {"order": "o-1"}, job.journal.steps["reserve"].started_at)
    assert event_items.register("acme", "payment.received", waiter, job.now) == []

    _, resumed = event_items.send(
        "acme", "payment.received", "pay-1", {"order": "o-1", "amount_cents": 1999}, job.now + 60
    )
    assert [found.job_id for found in resumed] == [job.job_id]
    data = json.dumps({"order": "o-1", "amount_cents": 1999})
    assert isinstance(job.later(60).resolve("payment", steps.Resolved("event", "pay-1", data)), steps.Applied)
    final = job.fresh().attempt_once()

    assert final.result == {"order": "o-1", "status": "paid", "charge": {"charge": "ch-o-1", "amount_cents": 1999}}
    assert len(job.invokes) == 3  # reserve (and the wait), charge, notify with the result
    assert [view["id"] for view in job.journal.views()] == ["reserve", "payment", "charge", "notify"]


def test_no_payment_within_the_hour_releases_the_stock(aws, orders):
    job = DurableJob("order_flow", {"order": "o-2"}, job_id="jt-order-2")
    job.attempt_once()

    assert isinstance(job.later(3600).resolve("payment", steps.TimedOut(StepKind.WAIT_FOR_EVENT)), steps.Applied)
    final = job.fresh().attempt_once()

    assert final.result == {"order": "o-2", "status": "expired"}
    assert job.statuses() == {"reserve": "succeeded", "payment": "timed_out", "release": "succeeded"}


def test_a_payment_sent_after_the_reservation_and_before_the_wait_registered_is_not_lost(aws, orders):
    job = DurableJob("order_flow", {"order": "o-3"}, job_id="jt-order-3")
    job.attempt_once()  # reserve recorded, the run stopped at the wait
    # The payment comes now, before the worker indexes the wait: no job waits for it yet.
    _, resumed = event_items.send(
        "acme", "payment.received", "pay-3", {"order": "o-3", "amount_cents": 500}, job.now + 1
    )
    assert resumed == []
    waiter = event_items.Waiter(job.job_id, "payment", {"order": "o-3"}, job.journal.steps["reserve"].started_at)

    found = event_items.register("acme", "payment.received", waiter, job.now + 2)

    assert [event.event_id for event in found] == ["pay-3"]  # the wait's look back finds it
    job.later(2).resolve("payment", steps.Resolved("event", "pay-3", json.dumps(found[0].data)))
    assert job.fresh().attempt_once().result["status"] == "paid"
