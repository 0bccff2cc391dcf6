"""Which client job items go through: DAX, the local stand-in, or DynamoDB."""

import pytest
from amazondax.DaxError import DaxClientError

from shared import environment
from shared.aws.clients import client
from shared.aws.status_cache import jobs_client


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
