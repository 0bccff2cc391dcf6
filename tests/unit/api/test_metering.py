"""Every write-path route counts against the tenant's rate limit: the API handler in-process on moto.

Each route is called once the tenant's bucket is empty: it answers 429 with Retry-After, as an
enqueue does, and changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from local.events import FakeLambdaContext, http_api_event
from shared.jobs.enqueue import JobRequest, enqueue
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.schedules import definitions, lifecycle, queries
from shared.store.jobs import job_store
from shared.targets import signing_secrets
from shared.tenants import quotas, tenants
from shared.worker.delivery import Delivery
from tests.unit.worker_harness import work


@pytest.fixture
def call(scheduler_env):
    from functions.api.handler import handler

    key = tenants.create_key("acme")

    def call(method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any], dict[str, str]]:
        response = handler(http_api_event(method, path, body, key), FakeLambdaContext())
        return response["statusCode"], json.loads(response["body"]), response.get("headers", {})

    return call


def _dead_job() -> JobMessage:
    message = enqueue("acme", JobRequest(JobSpec("fail", payload={"times": 9}, max_attempts=1)))
    assert work(message, Delivery(message_id=message.id, body=message.to_json())) == "dead"
    return message


def _queued(aws: dict[str, Any]) -> int:
    attributes = aws["sqs"].get_queue_attributes(
        QueueUrl=aws["queue_url"], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def _empty_the_bucket(call) -> None:
    """Limit the tenant to 1 job a day with no burst beyond one, and spend that one."""
    quotas.set_limits("acme", enqueue_rate_per_second=1 / 86_400, enqueue_burst=1)
    call("POST", "/v1/jobs", {"type": "echo"})
    assert call("POST", "/v1/jobs", {"type": "echo"})[0] == 429


def _assert_rate_limited(answer: tuple[int, dict[str, Any], dict[str, str]]) -> None:
    status, body, headers = answer
    assert status == 429, body
    assert body["error"] == "rate_limited"
    assert int(headers["Retry-After"]) == body["retry_after_seconds"] >= 1


_NEW_SCHEDULE = {"name": "new", "expression": "rate(1 hour)", "job": {"type": "echo"}}
_ROUTES = {
    "retry": lambda jobs: ("POST", f"/v1/jobs/{jobs['dead']}/retry", None),
    "bulk retry": lambda jobs: ("POST", "/v1/jobs:retry", {}),
    "cancel": lambda jobs: ("POST", f"/v1/jobs/{jobs['waiting']}/cancel", None),
    "schedule create": lambda jobs: ("POST", "/v1/schedules", _NEW_SCHEDULE),
    "schedule delete": lambda jobs: ("DELETE", "/v1/schedules/kept", None),
    "schedule update": lambda jobs: ("PATCH", "/v1/schedules/kept", {"job": {"payload": {"new": True}}}),
    "schedule pause": lambda jobs: ("POST", "/v1/schedules/kept:pause", {"note": "incident"}),
    "schedule resume": lambda jobs: ("POST", "/v1/schedules/kept:resume", None),
    "schedule trigger": lambda jobs: ("POST", "/v1/schedules/kept:trigger", None),
    "secret rotation": lambda jobs: ("POST", "/v1/signing-secrets:rotate", None),
}


@pytest.mark.parametrize("route", list(_ROUTES))
def test_a_write_route_answers_429_once_the_bucket_is_empty_and_changes_nothing(call, scheduler_env, route):
    dead = _dead_job()
    waiting = enqueue("acme", JobRequest(JobSpec("echo"), delay_seconds=600))
    lifecycle.create("acme", definitions.ScheduleRequest("kept", "rate(1 hour)", JobSpec("echo")))
    secrets = signing_secrets.active("acme")
    kept = queries.get("acme", "kept").public()
    _empty_the_bucket(call)
    sent = _queued(scheduler_env)

    _assert_rate_limited(call(*_ROUTES[route]({"dead": dead.id, "waiting": waiting.id})))

    assert job_store.get(dead.id).status is Status.DEAD
    assert job_store.get(waiting.id) is None  # never cancelled: no record written
    assert [item.name for item in queries.list_for("acme")] == ["kept"]
    assert queries.get("acme", "kept").public() == kept
    assert quotas.usage("acme")["schedules"] == 1
    assert [secret.id for secret in signing_secrets.active("acme")] == [secret.id for secret in secrets]
    assert _queued(scheduler_env) == sent


def test_a_bulk_retry_counts_each_job_it_resends(call, scheduler_env):
    for _ in range(3):
        _dead_job()
    quotas.set_limits("acme", enqueue_rate_per_second=1 / 86_400, enqueue_burst=4)

    status, body, _ = call("POST", "/v1/jobs:retry", {})
    assert (status, body["retried"]) == (200, 3)

    assert call("POST", "/v1/jobs", {"type": "echo"})[0] == 202  # the fourth token
    _assert_rate_limited(call("POST", "/v1/jobs", {"type": "echo"}))


def test_a_bulk_retry_that_finds_no_dead_job_counts_nothing(call):
    quotas.set_limits("acme", enqueue_rate_per_second=1 / 86_400, enqueue_burst=1)

    assert call("POST", "/v1/jobs:retry", {})[0] == 200
    assert call("POST", "/v1/jobs", {"type": "echo"})[0] == 202


def test_an_event_counts_one_job_and_one_for_each_trigger_on_its_name(call, scheduler_env):
    for name in ("a", "b", "c"):
        assert call("POST", "/v1/triggers", {"name": name, "event": "paid", "job": {"type": "echo"}})[0] == 201
    quotas.set_limits("acme", enqueue_rate_per_second=1 / 86_400, enqueue_burst=4)
    sent = _queued(scheduler_env)

    assert call("POST", "/v1/events", {"name": "refunded"})[0] == 202  # no trigger on its name: one unit, 3 left
    _assert_rate_limited(call("POST", "/v1/events", {"name": "paid"}))  # itself, then 3 more for its triggers' jobs
    assert _queued(scheduler_env) == sent + 1  # the refused event sent nothing

    assert call("POST", "/v1/jobs:batch", {"jobs": [{"type": "echo"}] * 2})[0] == 202  # what its own unit left
    _assert_rate_limited(call("POST", "/v1/jobs", {"type": "echo"}))


def test_an_event_over_the_limit_reads_no_trigger(call, monkeypatch):
    from shared.store.flow import trigger_items

    _empty_the_bucket(call)
    read = []
    monkeypatch.setattr(trigger_items, "listed", lambda *args: read.append(args) or 0)

    _assert_rate_limited(call("POST", "/v1/events", {"name": "paid"}))
    assert read == []


def test_an_event_is_sent_and_counted_one_while_the_store_does_not_answer_the_directory_read(
    call, scheduler_env, monkeypatch
):
    from botocore.exceptions import EndpointConnectionError

    from shared.store.flow import trigger_items

    assert call("POST", "/v1/triggers", {"name": "a", "event": "paid", "job": {"type": "echo"}})[0] == 201
    quotas.set_limits("acme", enqueue_rate_per_second=1 / 86_400, enqueue_burst=2)
    sent = _queued(scheduler_env)

    class Unreachable:
        def get_item(self, **_: Any) -> dict[str, Any]:
            raise EndpointConnectionError(endpoint_url="http://dynamodb")

    monkeypatch.setattr(trigger_items, "single_attempt_client", lambda service: Unreachable())

    assert call("POST", "/v1/events", {"name": "paid"})[0] == 202  # sent, as an enqueue is while the store blips
    assert _queued(scheduler_env) == sent + 1
    assert call("POST", "/v1/jobs", {"type": "echo"})[0] == 202  # it counted one: one unit left
