"""The process's boto3 clients: made once each, from one session per AWS_* environment."""

from __future__ import annotations

import threading

import pytest

from shared.aws import clients


@pytest.fixture
def fresh_clients():
    clients.client.cache_clear()
    clients.single_attempt_client.cache_clear()
    clients._session.cache_clear()
    yield
    clients.client.cache_clear()
    clients.single_attempt_client.cache_clear()


def _session_of(made) -> object:
    return made._loader  # a client's loader is its session's: one loader, one session's models


def test_clients_of_one_environment_share_one_session_and_its_loaded_models(aws, fresh_clients):
    sqs, dynamodb = clients.client("sqs"), clients.client("dynamodb")
    single = clients.single_attempt_client("dynamodb")

    assert _session_of(sqs) is _session_of(dynamodb) is _session_of(single)
    assert clients._session.cache_info().currsize == 1
    assert single is not dynamodb and single.meta.config.retries["total_max_attempts"] == 1


def test_a_changed_aws_environment_gets_a_session_of_its_own(aws, fresh_clients, monkeypatch):
    before = clients.client("sqs")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    clients.client.cache_clear()

    after = clients.client("sqs")

    assert _session_of(after) is not _session_of(before)
    assert after.meta.region_name == "eu-west-1" and before.meta.region_name == "us-east-1"


def test_clients_made_from_many_threads_at_once_all_work(aws, fresh_clients):
    made: list[object] = []
    errors: list[BaseException] = []

    def make(service: str) -> None:
        try:
            made.append(clients.single_attempt_client(service))
        except BaseException as error:  # a thread's failure is the test's
            errors.append(error)

    threads = [threading.Thread(target=make, args=(service,)) for service in ("sqs", "dynamodb", "scheduler") * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == [] and len(made) == 12
    assert clients.single_attempt_client("sqs").list_queues()["QueueUrls"]  # moto's queues, through the made client
