"""Bulk enqueue on moto: the domain (enqueue_many, send_batch's limits) and the POST /v1/jobs:batch route."""

import json

import pytest

from local.events import FakeLambdaContext, http_api_event
from shared import settings
from shared.aws import queue
from shared.errors import InvalidRequest
from shared.jobs.enqueue import JobRequest, NotSent, enqueue_many
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.tenants import tenants


def _queued(aws) -> list[dict]:
    bodies = []
    while True:
        got = aws["sqs"].receive_message(QueueUrl=aws["queue_url"], MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            return bodies
        bodies += [json.loads(message["Body"]) for message in got]


def test_enqueue_many_sends_every_valid_job_and_reports_the_invalid_one(aws):
    requests = [JobRequest(JobSpec("echo", payload={"n": n})) for n in range(25)]
    requests[7] = JobRequest(JobSpec("no-such-type"))

    outcomes = enqueue_many("acme", requests)

    assert isinstance(outcomes[7], InvalidRequest)
    assert outcomes[7].field == "type"
    sent = [outcome for outcome in outcomes if isinstance(outcome, JobMessage)]
    assert len(sent) == 24
    assert sorted(body["id"] for body in _queued(aws)) == sorted(message.id for message in sent)


def test_batches_hold_at_most_10_entries_and_256_kib():
    assert [len(chunk) for chunk in queue._chunks(list(range(25)), [100] * 25)] == [10, 10, 5]
    big = 60 * 1024
    assert queue._chunks(list(range(5)), [big] * 5) == [[0, 1, 2, 3], [4]]
    assert queue._chunks([0], [queue.BATCH_MAX_BYTES]) == [[0]]


def test_an_entry_sqs_rejects_fails_only_itself(aws, monkeypatch):
    real = queue.client("sqs")

    class RejectsSecondEntry:
        def send_message_batch(self, QueueUrl, Entries):
            response = real.send_message_batch(QueueUrl=QueueUrl, Entries=[e for e in Entries if e["Id"] != "1"])
            failed = {"Id": "1", "Code": "InvalidParameterValue", "Message": "no", "SenderFault": True}
            return {**response, "Failed": [*response.get("Failed", []), failed]}

    monkeypatch.setattr(queue, "client", lambda service: RejectsSecondEntry())

    outcomes = enqueue_many("acme", [JobRequest(JobSpec("echo", payload=n)) for n in range(3)])

    assert isinstance(outcomes[1], NotSent)
    assert [isinstance(outcome, JobMessage) for outcome in (outcomes[0], outcomes[2])] == [True, True]
    assert len(_queued(aws)) == 2


@pytest.fixture
def call_api(aws):
    from functions.api.handler import handler

    api_key = tenants.create_key("acme")

    def call(method, path, body=None):
        response = handler(http_api_event(method, path, body, api_key), FakeLambdaContext())
        return response["statusCode"], json.loads(response["body"])

    return call


def test_batch_route_accepts_all_and_does_not_collide_with_job_status(call_api, aws):
    status, body = call_api("POST", "/v1/jobs:batch", {"jobs": [{"type": "echo", "payload": n} for n in range(12)]})

    assert status == 202
    assert body["accepted"] == 12
    assert body["rejected"] == 0
    assert [result["index"] for result in body["results"]] == list(range(12))
    status, job = call_api("GET", f"/v1/jobs/{body['results'][3]['id']}")
    assert status == 200
    assert job["status"] == "queued"


def test_batch_route_reports_bad_items_by_field_with_207(call_api, aws):
    jobs = [{"type": "echo"}, {"type": "echo", "max_attempts": 0}, "not an object", {"type": "nope"}, {"type": "echo"}]

    status, body = call_api("POST", "/v1/jobs:batch", {"jobs": jobs})

    assert status == 207
    assert (body["accepted"], body["rejected"]) == (2, 3)
    results = body["results"]
    assert [r["status"] for r in results] == ["queued", "rejected", "rejected", "rejected", "queued"]
    assert results[1]["field"] == "jobs[1].max_attempts"
    assert results[2]["field"] == "jobs[2]"
    assert results[3]["field"] == "jobs[3].type"
    assert len(_queued(aws)) == 2


@pytest.mark.parametrize("count", [0, settings.MAX_BATCH_JOBS + 1])
def test_batch_of_no_jobs_or_too_many_is_422(call_api, count):
    status, body = call_api("POST", "/v1/jobs:batch", {"jobs": [{"type": "echo"}] * count})

    assert status == 422
    assert body["error"] == "invalid_request"
    assert body["fields"][0]["field"] == "jobs"


def test_a_bulk_job_due_beyond_the_sqs_delay_becomes_a_schedule_and_the_rest_are_queued(scheduler_env):
    far = settings.MAX_SQS_DELAY_SECONDS + 3600
    requests = [JobRequest(JobSpec("echo", payload=1)), JobRequest(JobSpec("echo", payload=2), delay_seconds=far)]

    outcomes = enqueue_many("acme", requests)

    assert all(isinstance(outcome, JobMessage) for outcome in outcomes)
    assert [body["payload"] for body in _queued(scheduler_env)] == [1]
    listed = scheduler_env["scheduler"].list_schedules(GroupName=settings.SCHEDULE_GROUP)["Schedules"]
    assert [entry["Name"] for entry in listed] == [f"d-{outcomes[1].id}"]
