"""The wire format stays what it was: a job message, an outcome message, a record's callbacks and a batch's
callbacks written before callbacks were `Callback` values (when they were dicts) read the same now, and
write back byte for byte. The literals below were written by that code, with the secret `SECRET`."""

from __future__ import annotations

import json
import typing

from functions.api.models import callback_model
from shared.model.message import JobMessage
from shared.model.outcome import OutcomeMessage, read_message
from shared.model.spec import Callback, Concurrency, JobSpec, callbacks_of, callbacks_to_dict
from shared.model.states import Status
from shared.store import keys
from shared.store.jobs import job_items

SECRET = b"s" * 32

# A batch's member (index 3) with its own concurrency key, a timeout, and both callbacks: on_success with
# every option, on_failure an http callback with a body.
MEMBER_WITH_CALLBACKS = (
    '{"v":1,"id":"jcwqn3blvellwhygjueyasfxxajuuf6asrlesngry","tenant":"acme","type":"echo","payload":{"n":1},'
    '"max_attempts":5,"enqueued_at":1800000000.5,"timeout_seconds":60,"concurrency":{"key":"k","limit":3},'
    '"batch":{"id":"bschcj3e5q6bv2w4ombyunfs4dnxhcyys6nti46i","index":3},"callbacks":{"on_success":{"type":"echo",'
    '"payload":{"note":"done"},"max_attempts":4,"timeout_seconds":30,"concurrency":{"key":"mail","limit":2},'
    '"include_parent_payload":true},"on_failure":{"type":"http","payload":{"url":"https://example.com/hook",'
    '"body":{"a":1}},"max_attempts":3}}}'
)
# A job's on_success callback, as its parent's end sent it.
CALLBACK_OF_A_JOB = (
    '{"v":1,"id":"jc7haw7zvqspcsq33bcu5flbgqch2qfrxgrepcqiq","tenant":"acme","type":"echo","payload":{"parent":'
    '{"id":"jtagrrqxcqabak7ltnodhwmh4n6ghqgg5hzz2yufy"}},"max_attempts":3,"enqueued_at":1800000002.0,"parent":'
    '{"kind":"job","id":"jtagrrqxcqabak7ltnodhwmh4n6ghqgg5hzz2yufy","callback":"on_success"}}'
)


def test_a_message_with_callbacks_written_before_callbacks_were_values_reads_as_callbacks_and_writes_back_the_same():
    message = JobMessage.from_body(MEMBER_WITH_CALLBACKS, sent_at=1_800_000_001, secret=SECRET)

    assert message.callbacks == {
        "on_success": Callback(JobSpec("echo", {"note": "done"}, 4, 30), Concurrency("mail", 2), True),
        "on_failure": Callback(JobSpec("http", {"url": "https://example.com/hook", "body": {"a": 1}}, 3)),
    }
    assert message.batch is not None and message.batch.index == 3
    assert message.to_json() == MEMBER_WITH_CALLBACKS


def test_a_callbacks_own_message_written_before_reads_the_same():
    message = read_message(CALLBACK_OF_A_JOB, sent_at=1_800_000_003, secret=SECRET)

    assert isinstance(message, JobMessage)
    assert message.parent == {
        "kind": "job",
        "id": "jtagrrqxcqabak7ltnodhwmh4n6ghqgg5hzz2yufy",
        "callback": "on_success",
    }
    assert message.to_json() == CALLBACK_OF_A_JOB


def test_an_outcome_message_carrying_a_job_with_callbacks_reads_and_writes_back_the_same():
    body = (
        '{"kind":"outcome","v":1,"job":' + MEMBER_WITH_CALLBACKS + ',"status":"succeeded",'
        '"started_at":1800000003.0,"finished_at":1800000004.0,"result":{"ok":true}}'
    )

    outcome = read_message(body, sent_at=1_800_000_005, secret=SECRET)

    assert isinstance(outcome, OutcomeMessage) and outcome.status is Status.SUCCEEDED
    assert outcome.job.callbacks is not None and outcome.job.callbacks["on_success"].include_parent_payload
    assert outcome.to_json() == body


def test_a_records_and_a_batchs_callbacks_written_before_read_back_the_same():
    kept = json.dumps(json.loads(MEMBER_WITH_CALLBACKS)["callbacks"], separators=(",", ":"))
    item = {
        "pk": {"S": keys.job_key("jcwqn3blvellwhygjueyasfxxajuuf6asrlesngry")},
        "tenant": {"S": "acme"},
        "job_type": {"S": "echo"},
        "payload_json": {"S": '{"n":1}'},
        "max_attempts": {"N": "5"},
        "callbacks_json": {"S": kept},
    }

    again = job_items.message_from_item(item, enqueued_at=1_800_000_010.0)

    assert again.callbacks is not None
    assert job_items.relations(again)["callbacks_json"] == {"S": kept}
    # A batch keeps its callbacks' objects by kind in one attribute, the same way.
    batch_specs = '{"on_complete":{"type":"echo","payload":null,"max_attempts":3}}'
    assert json.dumps(callbacks_to_dict(callbacks_of(json.loads(batch_specs))), separators=(",", ":")) == batch_specs


def test_the_apis_callback_body_has_exactly_a_callbacks_fields():
    """The API's model of a callback and the model's Callback name the same fields (a batch's callback
    has no parent, so it cannot ask for the parent's payload)."""
    assert tuple(typing.get_type_hints(callback_model("AJobsCallback"))) == Callback.fields()
    assert set(typing.get_type_hints(callback_model("ABatchsCallback", adds="batch"))) == set(Callback.fields()) - {
        "include_parent_payload"
    }
