"""Operator keys: listed without their secret, revoked by id, and expiring on their own."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from functions.api.handler import handler
from local.events import FakeLambdaContext, http_api_event
from shared.errors import InvalidRequest
from shared.store import keys
from shared.store.tenants import tenant_items
from shared.tenants import api_keys, operators


def test_operator_keys_are_listed_by_id_and_label_never_by_key(aws):
    first = operators.create_key("alice's laptop")
    second = operators.create_key("deploy pipeline", expires_in_days=30)

    listed = {info.key_id: info for info in operators.list_keys()}

    assert set(listed) == {api_keys.key_id(first), api_keys.key_id(second)}
    assert listed[api_keys.key_id(first)].label == "alice's laptop"
    assert listed[api_keys.key_id(first)].expires_at is None
    expires = datetime.fromisoformat(listed[api_keys.key_id(second)].expires_at)
    assert timedelta(days=29) < expires - datetime.now(UTC) <= timedelta(days=30)
    assert first not in repr(listed) and api_keys.digest(first) not in repr(listed)


def test_an_operator_key_is_revoked_by_its_id(aws):
    key = operators.create_key("to revoke")
    kept = operators.create_key("to keep")
    assert operators.is_operator(key)

    assert operators.revoke(api_keys.key_id(key)) is True
    operators.clear_cache()  # an API instance forgets it within its key cache's bound

    assert not operators.is_operator(key)
    assert operators.is_operator(kept)
    assert operators.revoke(api_keys.key_id(key)) is False  # already gone
    assert [info.key_id for info in operators.list_keys()] == [api_keys.key_id(kept)]


def test_an_expired_operator_key_opens_nothing(aws):
    key = operators.create_key("short-lived", expires_in_days=1)
    assert operators.is_operator(key)
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat(timespec="seconds")
    aws["dynamodb"].update_item(
        TableName="corral-jobs",
        Key=keys.item_key(keys.operator_key_key(api_keys.digest(key))),
        UpdateExpression="SET expires_at_iso = :past",
        ExpressionAttributeValues={":past": {"S": past}},
    )
    operators.clear_cache()

    assert tenant_items.operator_key_owner(api_keys.digest(key)) is None
    assert not operators.is_operator(key)


@pytest.mark.parametrize("days", [0, -1, 10_000])
def test_an_expiry_out_of_range_is_refused_naming_it(aws, days):
    with pytest.raises(InvalidRequest) as refused:
        operators.create_key("x", expires_in_days=days)
    assert refused.value.field == "expires_in_days"
    assert operators.list_keys() == []


def test_I1_a_cached_operator_key_stops_working_the_moment_it_expires_with_no_store_read(aws, monkeypatch):
    key = operators.create_key("short-lived", expires_in_days=2 / 86_400)  # two seconds
    assert operators.is_operator(key)  # looked up once: cached for api_key_cache_seconds (60 s here)
    expires_at = next(info.expires_at for info in operators.list_keys())
    assert expires_at is not None

    def no_io(*_args, **_kwargs):
        raise AssertionError("the store was read")

    monkeypatch.setattr(tenant_items, "client", no_io)
    while datetime.now(UTC).isoformat(timespec="seconds") < expires_at:  # two seconds at most
        time.sleep(0.2)

    assert not operators.is_operator(key)
    event = http_api_event("GET", "/operator/v1/queues", api_key=key)
    assert handler(event, FakeLambdaContext())["statusCode"] == 401
