"""Which client job items go through: DAX, the local stand-in, or DynamoDB; and how a status poll bounds
a stale miss of the cache."""

import time
from typing import Any

import pytest
from amazondax.DaxError import DaxClientError

from shared import environment, settings
from shared.aws.clients import client
from shared.aws.status_cache import jobs_client
from shared.model.states import Status
from shared.worker.delivery import Delivery


@pytest.fixture(autouse=True)
def _no_endpoints(monkeypatch):
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    client.cache_clear()
    yield
    client.cache_clear()


def test_without_a_cache_job_items_go_to_dynamodb():
    assert jobs_client().meta.endpoint_url == "https://dynamodb.us-east-1.amazonaws.com"


def test_the_local_stand_in_is_used_when_its_endpoint_is_set(monkeypatch):
    environment.change(status_cache_endpoint="http://127.0.0.1:4999")

    assert jobs_client().meta.endpoint_url == "http://127.0.0.1:4999"


def test_dax_is_used_when_its_endpoint_is_set(monkeypatch):
    # The DAX client discovers the cluster when created; nothing listens here, so it says so.
    environment.change(dax_endpoint="dax://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    with pytest.raises(DaxClientError, match="NoRouteException"):
        jobs_client()


def test_a_single_attempt_client_goes_the_same_way_without_retries(monkeypatch):
    environment.change(dax_endpoint="", status_cache_endpoint="http://127.0.0.1:4999")

    single = jobs_client(single_attempt=True)

    assert single.meta.endpoint_url == "http://127.0.0.1:4999"
    assert single.meta.config.retries["total_max_attempts"] == 1
    assert jobs_client().meta.config.retries["total_max_attempts"] == 5  # botocore's 4 retries


# A stale miss (DAX's negative entry outliving a worker's write) -----------------------------------------


class StaleMisses:
    """The status cache as a DAX node holding a negative entry for every job: eventually consistent reads
    find nothing; strongly consistent ones pass through to the table, as DAX passes them."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.consistent_reads = 0

    def get_item(self, **params: Any) -> dict[str, Any]:
        if not params.get("ConsistentRead"):
            return {}
        self.consistent_reads += 1
        return self.real.get_item(**params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_stale_miss_for_a_job_queued_a_while_ago_is_read_again_from_the_table_at_most_once_per_bound(
    aws, monkeypatch
):
    from shared.jobs import status
    from shared.jobs.enqueue import JobRequest, build_message
    from shared.store.jobs import job_items
    from tests.unit.worker_harness import work

    a_while_ago = time.time() - settings.STATUS_MISS_RECHECK_SECONDS - 1
    old = build_message("acme", JobRequest.from_fields({"type": "echo", "payload": 1}), a_while_ago)
    fresh = build_message("acme", JobRequest.from_fields({"type": "echo", "payload": 2}), time.time())
    for message in (old, fresh):
        work(message, Delivery(message_id=message.id, body=message.to_json()))
    stale = StaleMisses(job_items.jobs_client())
    monkeypatch.setattr(job_items, "jobs_client", lambda single_attempt=False: stale)

    assert status.job_status("acme", old.id).status is Status.SUCCEEDED  # not `queued` until the TTL
    with pytest.raises(status.JobNotFound):  # another tenant's job stays unknown
        status.job_status("other", old.id)
    assert status.job_status("acme", fresh.id).status is Status.QUEUED  # just enqueued: the miss is believed
    assert stale.consistent_reads == 1

    for _ in range(5):  # polls within the bound cost the table nothing more
        status.job_status("acme", old.id)
    assert stale.consistent_reads == 1
