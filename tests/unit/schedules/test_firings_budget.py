"""The firings budget: each recurring schedule weighs the most firings it makes in an hour, and a tenant's
schedules together may weigh at most max_firings_per_minute x 60 (moto)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from local.events import FakeLambdaContext, http_api_event
from shared.aws import eventbridge
from shared.errors import InvalidRequest, QuotaExceeded
from shared.model.spec import JobSpec
from shared.schedules import definitions, expressions, lifecycle, queries
from shared.store.schedules.schedule_items import ScheduleItem
from shared.tenants import quotas, tenants


def _create(name: str, expression: str) -> ScheduleItem:
    return lifecycle.create("acme", definitions.ScheduleRequest(name=name, expression=expression, job=JobSpec("echo")))


def _held() -> int:
    return quotas.usage("acme")["firings_per_hour"]


@pytest.mark.parametrize(
    ("expression", "weight"),
    [
        ("rate(1 minute)", 60),
        ("rate(7 minutes)", 9),
        ("rate(1 hour)", 1),
        ("rate(2 days)", 1),
        ("cron(0/5 * * * ? *)", 12),
        ("cron(0 2 * * ? *)", 1),
        ("cron(0,30 9-17 ? * MON-FRI *)", 2),
        ("at(2030-01-01T00:00:00)", 0),
    ],
)
def test_a_schedule_weighs_its_busiest_hours_firings(expression, weight):
    assert expressions.firings_per_hour(expression) == weight


def test_a_create_past_the_budget_is_refused_naming_it_and_creates_nothing(scheduler_env):
    quotas.set_limits("acme", max_firings_per_minute=2)
    _create("a", "rate(1 minute)")
    _create("b", "rate(2 minutes)")  # 60 + 30 of 120 an hour

    with pytest.raises(QuotaExceeded) as refused:
        _create("c", "rate(1 minute)")

    assert refused.value.retry_can_help and refused.value.limit_name == "max_firings_per_minute"
    assert refused.value.message == (
        "firings-per-minute budget quota reached: 1.5 of 2 (max_firings_per_minute); this request needs 1"
    )
    assert [item.name for item in queries.list_for("acme")] == ["a", "b"]
    expected = {"schedules": 2, "far_future_jobs": 0, "firings_per_hour": 90, "triggers": 0, "waiting_jobs": 0}
    assert quotas.usage("acme") == expected
    assert len(scheduler_env["scheduler"].list_schedules()["Schedules"]) == 2
    _create("d", "cron(0 * * * ? *)")  # what still fits
    _create("e", "at(2030-01-01T00:00:00)")  # a one-time schedule weighs nothing
    assert _held() == 91


def test_a_schedule_over_the_whole_budget_is_forbidden(scheduler_env):
    quotas.set_limits("acme", max_firings_per_minute=0)
    with pytest.raises(QuotaExceeded) as refused:
        _create("a", "rate(1 hour)")
    assert not refused.value.retry_can_help  # 403: only the operator raising the limit helps
    _create("once", "at(2030-01-01T00:00:00)")


def test_an_update_moves_the_weight_and_one_past_the_budget_changes_nothing(scheduler_env):
    quotas.set_limits("acme", max_firings_per_minute=1)
    _create("a", "rate(5 minutes)")
    assert _held() == 12

    lifecycle.update("acme", "a", {"expression": "rate(1 minute)"})
    assert _held() == 60
    with pytest.raises(QuotaExceeded):  # the budget is full
        _create("b", "rate(1 hour)")

    lifecycle.update("acme", "a", {"expression": "rate(10 minutes)"})
    assert _held() == 6
    _create("b", "rate(1 hour)")
    assert _held() == 7
    with pytest.raises(QuotaExceeded):
        lifecycle.update("acme", "b", {"expression": "rate(1 minute)"})
    assert queries.get("acme", "b").expression == "rate(1 hour)" and _held() == 7

    lifecycle.update("acme", "b", {"job": {"payload": {"n": 1}}})  # no weight moves
    assert _held() == 7
    assert quotas.usage("acme")["schedules"] == 2  # an update never changes the count


def test_a_delete_gives_its_weight_back(scheduler_env):
    _create("a", "rate(1 minute)")
    _create("b", "cron(0/15 * * * ? *)")
    assert _held() == 64

    lifecycle.delete("acme", "a")

    expected = {"schedules": 1, "far_future_jobs": 0, "firings_per_hour": 4, "triggers": 0, "waiting_jobs": 0}
    assert quotas.usage("acme") == expected


def test_an_update_scheduler_refuses_gives_the_weight_it_reserved_back(scheduler_env, monkeypatch):
    _create("a", "rate(1 hour)")

    def refuses(*_args: Any) -> None:
        raise eventbridge.Rejected("expression", "no")

    monkeypatch.setattr(eventbridge, "update", refuses)
    with pytest.raises(InvalidRequest):
        lifecycle.update("acme", "a", {"expression": "rate(1 minute)"})

    assert _held() == 1
    assert queries.get("acme", "a").held == 1


def test_creates_racing_for_the_last_of_the_budget_never_pass_it(scheduler_env):
    quotas.set_limits("acme", max_firings_per_minute=3)  # 180 an hour: three rate(1 minute) schedules
    refused: list[Exception] = []

    def create(n: int) -> None:
        try:
            _create(f"s{n}", "rate(1 minute)")
        except QuotaExceeded as error:
            refused.append(error)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(refused) == 5
    assert quotas.usage("acme")["firings_per_hour"] == 180
    assert len(queries.list_for("acme")) == 3


def test_the_api_answers_429_quota_exceeded_naming_the_budget(scheduler_env):
    from functions.api.handler import handler

    key = tenants.create_key("acme")
    quotas.set_limits("acme", max_firings_per_minute=1)
    body = {"name": "busy", "expression": "rate(1 minute)", "job": {"type": "echo"}}
    assert handler(http_api_event("POST", "/v1/schedules", body, key), FakeLambdaContext())["statusCode"] == 201

    again = handler(http_api_event("POST", "/v1/schedules", {**body, "name": "more"}, key), FakeLambdaContext())

    assert again["statusCode"] == 429
    answer = json.loads(again["body"])
    assert (answer["error"], answer["quota"], answer["limit"], answer["count"]) == (
        "quota_exceeded",
        "max_firings_per_minute",
        1,
        1,
    )
