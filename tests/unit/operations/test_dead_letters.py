"""The operator's view of the DLQ on moto: reasons per tenant, and a redrive that makes dead jobs
runnable again (their records reset), for one tenant or all."""

import json

from shared.jobs import enqueue
from shared.jobs.enqueue import JobRequest
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.operations import dead_letters
from shared.store.jobs import job_store
from shared.worker.delivery import Delivery
from tests.unit.worker_harness import work


def _dead_job(tenant: str) -> str:
    message = enqueue.enqueue(tenant, JobRequest(JobSpec("fail", payload={"times": 9}, max_attempts=1)))
    work(message, Delivery(message_id=f"m-{message.id}", body=message.to_json()))
    assert job_store.get(message.id).status is Status.DEAD
    return message.id


def _drain(aws, url_key: str) -> list[dict]:
    bodies = []
    for _ in range(20):
        got = aws["sqs"].receive_message(QueueUrl=aws[url_key], MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            break
        bodies += [json.loads(m["Body"]) for m in got]
    return bodies


def test_inspect_shows_reasons_per_tenant_and_leaves_the_messages(aws):
    acme, other = _dead_job("acme"), _dead_job("other")
    aws["sqs"].send_message(QueueUrl=aws["dlq_url"], MessageBody="not json")  # e.g. a hand-made message

    letters = dead_letters.inspect(limit=10)
    assert {letter.job_id for letter in letters} == {acme, other, None}
    assert all("fail" in letter.reason or "attempt" in letter.reason for letter in letters if letter.job_id)
    assert [letter.job_id for letter in dead_letters.inspect(tenant="acme", limit=10)] == [acme]
    assert dead_letters.count() == 3  # looking released them


def test_redrive_one_tenant_resets_its_jobs_and_leaves_the_rest(aws):
    acme, other = _dead_job("acme"), _dead_job("other")
    _drain(aws, "queue_url")

    report = dead_letters.redrive(tenant="acme")

    assert report.redriven == [acme] and report.other_tenants == 1
    assert job_store.get(acme).status is Status.QUEUED
    assert job_store.get(other).status is Status.DEAD
    assert [body["id"] for body in _drain(aws, "queue_url")] == [acme]
    assert [letter.job_id for letter in dead_letters.inspect(limit=10)] == [other]


def test_redrive_all_skips_what_is_not_a_job_and_drops_stale_messages(aws):
    done = enqueue.enqueue("acme", JobRequest(JobSpec("echo", payload=1)))
    work(done, Delivery(message_id="m-done", body=done.to_json()))
    aws["sqs"].send_message(QueueUrl=aws["dlq_url"], MessageBody=done.to_json())  # it succeeded since: stale
    aws["sqs"].send_message(QueueUrl=aws["dlq_url"], MessageBody="not json")

    report = dead_letters.redrive()

    assert report.stale == [done.id] and report.redriven == []
    assert [entry["reason"] for entry in report.left] == ["not a corral job message (left for a human)"]
    assert dead_letters.count() == 1
