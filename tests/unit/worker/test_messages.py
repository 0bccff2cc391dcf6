"""The worker Lambda against whatever arrives on the queue: every message runs, or ends in the DLQ with
its reason, and a job whose id verifies is never left without a record that tells the truth."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from shared import ids, settings
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.message import JobMessage, UnreadableMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.id_secret import id_secret
from shared.store.jobs import job_claims, job_items, job_store
from tests.unit.worker_harness import body, dead_letters, deliver, record


def _job(**fields) -> dict:
    """A valid job message's fields for tenant acme, with `fields` on top."""
    return {
        "v": 1,
        "id": ids.timed_id(id_secret(), "acme"),
        "tenant": "acme",
        "type": "echo",
        "payload": {"n": 1},
        "max_attempts": 3,
        "enqueued_at": time.time(),
    } | fields


def test_a_job_enqueued_without_a_payload_runs_with_a_null_payload(aws):
    message = build_message("acme", JobRequest(JobSpec("echo")), time.time())
    assert json.loads(message.to_json())["payload"] is None  # the key is there: null, not missing

    batch = deliver(aws, message.to_json())

    assert batch.failed == []
    job = record(message.id)
    assert (job.status, job.result) == (Status.SUCCEEDED, None)


def test_a_message_without_a_payload_key_is_a_null_payload(aws):
    fields = _job()
    del fields["payload"]

    deliver(aws, body(**fields))

    assert record(fields["id"]).status is Status.SUCCEEDED


def test_deeply_nested_payloads_round_trip_without_recursion(aws):
    payload: object = "leaf"
    for _ in range(400):
        payload = [payload]
    # The API refuses payloads nested deeper than settings.MAX_PAYLOAD_DEPTH; the worker must still
    # carry a deeper one (e.g. a message written by an older API) without recursing.
    message = dataclasses.replace(build_message("acme", JobRequest(JobSpec("echo")), time.time()), payload=payload)

    deliver(aws, message.to_json())

    assert record(message.id).result == payload


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"type": ["echo"]}, "field 'type' must be a non-empty string"),
        ({"max_attempts": "3"}, "field 'max_attempts' must be an integer from 1 to 25"),
        ({"max_attempts": True}, "field 'max_attempts' must be an integer"),
        ({"max_attempts": 0}, "field 'max_attempts' must be an integer"),
        ({"enqueued_at": "yesterday"}, "field 'enqueued_at' must be a positive number"),
        ({"timeout_seconds": 901}, "field 'timeout_seconds' must be an integer from 1 to 900"),
        ({"timeout_seconds": 1.5}, "field 'timeout_seconds' must be an integer"),
        ({"v": 2}, "field 'v' must be 1"),
        ({"schedule": 7}, "field 'schedule' must be a non-empty string"),
        ({"surprise": 1}, "unknown field 'surprise'"),
        ({"type": "no-such-type"}, "unknown job type 'no-such-type'"),
        ({"payload": "x" * settings.MAX_PAYLOAD_BYTES}, "field 'payload'"),
    ],
)
def test_a_verified_message_that_cannot_run_is_recorded_dead_with_its_reason_and_buried(aws, fields, reason):
    message = _job(**fields)

    batch = deliver(aws, body(**message))

    assert batch.failed == []  # not cycled through the queue as if the store were down
    job = record(message["id"])
    assert job.status is Status.DEAD
    assert reason in job.error
    assert job.attempts == 0
    ((buried, why),) = dead_letters(aws)
    assert json.loads(buried) == message
    assert reason in why


def test_a_dead_on_arrival_record_keeps_what_rebuilds_the_job_and_its_listing_index(aws):
    message = _job(max_attempts=99)

    deliver(aws, body(**message))

    item = aws["dynamodb"].get_item(TableName=settings.TABLE_NAME, Key={"pk": {"S": f"job#{message['id']}"}})["Item"]
    assert item["status"]["S"] == "dead"
    assert item["tenant"]["S"] == "acme"
    assert item["job_type"]["S"] == "echo"
    assert json.loads(item["payload_json"]["S"]) == {"n": 1}
    assert "max_attempts" not in item  # the invalid field is not recorded
    assert item | job_items.index_attributes("acme", message["enqueued_at"], message["id"]) == item


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not json at all", "not JSON"),
        ("[1, 2]", "a JSON list, not an object"),
        ('{"tenant": "acme", "x": NaN}', "not JSON"),
        ("[" * 5000 + "]" * 5000, "not JSON"),
        (json.dumps({"type": "echo"}), "field 'tenant'"),
        (json.dumps({"tenant": ["acme"], "id": "x"}), "field 'tenant'"),
        (json.dumps({"tenant": "acme", "type": "echo", "payload": 1}), "no id, and no schedule"),
        (json.dumps({"tenant": "acme", "id": 5}), "does not verify"),
        (json.dumps({"tenant": "acme", "id": "jt-made-up", "type": "echo"}), "does not verify"),
    ],
)
def test_a_message_without_a_verifiable_id_goes_to_the_dlq_with_its_reason_and_writes_nothing(aws, raw, reason):
    batch = deliver(aws, raw)

    assert batch.failed == []
    ((buried, why),) = dead_letters(aws)
    assert buried == raw
    assert reason in why
    assert aws["dynamodb"].scan(TableName=settings.TABLE_NAME, Select="COUNT")["Count"] == 1  # the id secret only


def test_a_forged_tenant_cannot_take_over_another_tenants_job(aws):
    victim = _job(type="fail", payload={"times": 5})
    deliver(aws, body(**victim))  # attempt 1 fails: the job is `failed`, waiting for its retry
    assert record(victim["id"]).status is Status.FAILED

    deliver(aws, body(**(victim | {"tenant": "mallory", "type": "echo"})))

    job = job_store.get(victim["id"])
    assert job.tenant == "acme"
    assert (job.status, job.attempts) == (Status.FAILED, 1)
    assert any("does not verify for tenant 'mallory'" in why for _, why in dead_letters(aws))


def test_a_claim_never_changes_a_records_tenant_even_for_a_message_that_got_past_verification(aws):
    victim = JobMessage.from_dict(_job(type="fail", payload={"times": 5}))
    claim = job_claims.claim(victim, "m1", time.time(), lease_seconds=10)
    job_store.record_failure(victim.id, claim.token, "failed", time.time())

    forged = JobMessage.from_dict(victim.to_dict() | {"tenant": "mallory"})

    assert isinstance(job_claims.claim(forged, "m2", time.time(), lease_seconds=10), job_claims.Foreign)
    assert job_store.get(victim.id).tenant == "acme"


def test_a_bad_message_for_a_job_that_already_has_a_record_leaves_the_record_alone(aws):
    message = _job()
    deliver(aws, body(**message))
    assert record(message["id"]).status is Status.SUCCEEDED

    deliver(aws, body(**(message | {"type": ["echo"]})))

    job = record(message["id"])
    assert (job.status, job.result) == (Status.SUCCEEDED, {"n": 1})
    ((_, why),) = dead_letters(aws)
    assert "field 'type'" in why


def test_a_firing_without_an_id_runs_as_its_occurrence(aws):
    firing = {"v": 1, "tenant": "acme", "type": "echo", "payload": 3, "max_attempts": 2, "schedule": "nightly"}
    firing["scheduled_for"] = "2026-12-01T00:00:00Z"

    deliver(aws, body(**firing))

    job_id = ids.scheduled_id(id_secret(), "acme", "nightly", "2026-12-01T00:00:00Z")
    job = record(job_id)
    assert (job.status, job.result, job.schedule) == (Status.SUCCEEDED, 3, "nightly")


def test_a_firing_with_a_bad_field_is_recorded_dead_as_its_occurrence(aws):
    firing = {"v": 1, "tenant": "acme", "type": "echo", "max_attempts": "many", "schedule": "nightly"}
    firing["scheduled_for"] = "2026-12-01T00:00:00Z"

    deliver(aws, body(**firing))

    job = record(ids.scheduled_id(id_secret(), "acme", "nightly", "2026-12-01T00:00:00Z"))
    assert job.status is Status.DEAD
    assert job.schedule == "nightly"
    assert "max_attempts" in job.error


def test_the_parser_names_every_bad_field_at_once(aws):
    with pytest.raises(UnreadableMessage) as unreadable:
        JobMessage.from_body(body(**_job(type=1, max_attempts=None)), sent_at=time.time(), secret=id_secret())

    assert "field 'type'" in unreadable.value.reason
    assert "field 'max_attempts'" in unreadable.value.reason
    assert unreadable.value.job["tenant"] == "acme"


def test_a_message_is_written_without_copying_its_payload_recursively():
    # dataclasses.asdict copied payloads level by level and hit the recursion limit near 600 levels.
    payload: object = 0
    for _ in range(900):
        payload = [payload]
    message = JobMessage(id="j", tenant="acme", type="echo", payload=payload, max_attempts=1, enqueued_at=1.0)

    assert json.loads(message.to_json())["payload"] == payload


def test_the_parser_knows_every_field_a_message_carries():
    # A field added to JobMessage but not to the parser would bury every message that carries it.
    from shared.model.message_fields import FIELD_CHECKS

    assert set(JobMessage.__dataclass_fields__) - {"id", "tenant"} == set(FIELD_CHECKS)


def test_M7_a_message_naming_another_tenants_batch_or_another_job_as_its_parent_counts_nowhere(aws, monkeypatch):
    from shared.aws import queue
    from shared.batches import batches
    from shared.jobs.enqueue import JobRequest as Request
    from shared.store.batches import batch_items

    monkeypatch.setattr(queue, "send_batch", lambda messages: [None] * len(messages))  # members unsent
    acme_batch = batches.create("acme", batches.BatchRequest(jobs=[Request(JobSpec("echo"))] * 2)).id
    secret = id_secret()
    mallory = {"tenant": "mallory", "id": ids.timed_id(secret, "mallory")}
    # A message for a real job of mallory's (its id verifies), naming acme's batch; and a callback-shaped
    # one naming a parent its id is not derived from.
    forged_batch = _job(**mallory, batch={"id": acme_batch, "index": 0})
    forged_parent = _job(
        tenant="acme",
        id=ids.timed_id(secret, "acme", time.time() + 1),
        parent={"kind": "job", "id": ids.timed_id(secret, "acme"), "callback": "on_success"},
    )

    for fields in (forged_batch, forged_parent):
        with pytest.raises(UnreadableMessage, match="is not this job's") as unreadable:
            JobMessage.from_body(body(**fields), sent_at=time.time(), secret=secret)
        assert not {"batch", "parent"} & set(unreadable.value.job)  # recorded dead without them
        deliver(aws, body(**fields))
        assert record(fields["id"]).status is Status.DEAD

    counts = batch_items.get(acme_batch)
    assert (counts.pending, counts.dead) == (2, 0)  # acme's batch counted nothing of mallory's message
    assert record(forged_batch["id"]).batch is None and record(forged_parent["id"]).parent is None


def test_M7_a_batch_members_and_a_callbacks_own_lineage_is_read_as_sent(aws):
    secret = id_secret()
    batch = ids.batch_id(secret, "acme", time.time())
    member = _job(id=ids.child_id(secret, "acme", batch, "3"), batch={"id": batch, "index": 3})
    parent_id = ids.timed_id(secret, "acme")
    callback = _job(
        id=ids.child_id(secret, "acme", parent_id, "on_failure"),
        parent={"kind": "job", "id": parent_id, "callback": "on_failure"},
    )
    batch_callback = _job(
        id=ids.child_id(secret, "acme", batch, "on_complete"),
        parent={"kind": "batch", "id": batch, "callback": "on_complete"},
    )

    for fields in (member, callback, batch_callback):
        message = JobMessage.from_body(body(**fields), sent_at=time.time(), secret=secret)
        assert message.parent == fields.get("parent")
        assert (message.batch.to_dict() if message.batch else None) == fields.get("batch")
