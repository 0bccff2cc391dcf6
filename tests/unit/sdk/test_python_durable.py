"""The SDK's `events` and `tokens` against the stub HTTP server of test_python: what they send, what they answer,
and which of their requests are retried."""

from __future__ import annotations

import pytest

from client import Conflict, CorralError, errors
from tests.unit.sdk.test_python import corral, slept, stub  # noqa: F401  (the fixtures)


def test_an_event_is_sent_with_its_name_data_and_id_and_answers_the_id(stub, corral):  # noqa: F811
    stub.replies = [(202, {"id": "pay-42"})]
    assert corral.events.send("payment.received", {"order": 42}, id="pay-42") == "pay-42"
    (seen,) = stub.requests
    assert (seen.method, seen.path) == ("POST", "/v1/events")
    assert seen.body == {"name": "payment.received", "data": {"order": 42}, "id": "pay-42"}


def test_an_event_without_an_id_gets_one_that_its_retries_keep(stub, corral, slept):  # noqa: F811
    stub.replies = ["drop", (503, {"error": "unavailable", "message": "try again"}), (202, {"id": "whatever"})]
    corral.events.send("payment.received")
    ids = [seen.body["id"] for seen in stub.requests]
    assert len(ids) == 3 and len(set(ids)) == 1 and ids[0].startswith("ev_")
    assert stub.requests[0].body["data"] is None


def test_an_event_id_sent_again_with_other_content_is_a_conflict(stub, corral):  # noqa: F811
    stub.replies = [(409, {"error": "conflict", "message": "event pay-42 was sent with other content"})]
    with pytest.raises(Conflict) as raised:
        corral.events.send("payment.received", {"order": 43}, id="pay-42")
    assert raised.value.status == 409 and len(stub.requests) == 1


def test_a_bad_event_name_is_an_invalid_request_naming_the_field(stub, corral):  # noqa: F811
    stub.replies = [(422, {"error": "invalid_request", "message": "too long", "field": "name"})]
    with pytest.raises(errors.InvalidRequest) as raised:
        corral.events.send("x" * 300)
    assert raised.value.field == "name"


def test_a_token_is_completed_with_its_data_and_a_second_completion_is_a_conflict(stub, corral):  # noqa: F811
    stub.replies = [
        (200, {"id": "tk_1/2", "status": "completed"}),
        (409, {"error": "conflict", "message": "token tk_1/2 was completed already"}),
    ]
    assert corral.tokens.complete("tk_1/2", {"approved": True}) == {"id": "tk_1/2", "status": "completed"}
    with pytest.raises(Conflict, match="completed already") as raised:
        corral.tokens.complete("tk_1/2")
    assert isinstance(raised.value, CorralError) and raised.value.status == 409
    first, second = stub.requests
    assert first.path == "/v1/tokens/tk_1%2F2:complete"  # the id is one path segment
    assert (first.method, first.body, second.body) == ("POST", {"data": {"approved": True}}, {"data": None})


def test_a_token_completion_dropped_mid_request_is_not_sent_again(stub, corral):  # noqa: F811
    stub.replies = ["drop"]
    with pytest.raises(errors.ConnectionFailed):
        corral.tokens.complete("tk_1", {"approved": True})
    assert len(stub.requests) == 1


def test_an_unknown_token_is_not_found(stub, corral):  # noqa: F811
    stub.replies = [(404, {"error": "not_found", "message": "no such token"})]
    with pytest.raises(errors.NotFound):
        corral.tokens.complete("tk_nope")
