"""The API's AWS calls fit inside its timeout: an attempt that might outlast the deadline never starts."""

import pytest

from shared.aws import clients as boto


def test_an_attempt_that_could_outlast_the_deadline_is_refused_before_it_is_sent(aws):
    sqs = boto.client("sqs")
    worst = boto._timeouts.attempt_worst

    with boto.deadline(worst + 5):
        sqs.list_queues()  # enough time left: sent
    with boto.deadline(worst - 0.1), pytest.raises(boto.DeadlineExceeded):
        sqs.list_queues()
    sqs.list_queues()  # no deadline outside the block


def test_the_api_budget_leaves_room_for_two_full_attempts_within_its_timeout():
    from infra.api import API_TIMEOUT_SECONDS
    from shared import settings

    attempt = settings.API_AWS_CONNECT_TIMEOUT_SECONDS + settings.API_AWS_READ_TIMEOUT_SECONDS
    assert 2 * attempt + settings.API_ANSWER_MARGIN_SECONDS < API_TIMEOUT_SECONDS
