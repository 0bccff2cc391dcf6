"""A schedule's firing becomes one job per occurrence, whatever Scheduler delivers twice."""

import json

import pytest

from shared import ids
from shared.model.firing import SCHEDULED_TIME, scheduled_time
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.store.id_secret import id_secret

SENT_AT = 1_796_083_207.5  # 2026-12-01T00:00:07.5Z


def _firing(scheduled_for: str) -> str:
    body = json.loads(JobMessage.firing_template("acme", "nightly", JobSpec("echo", {"n": 1}, 3)))
    assert body["scheduled_for"] == SCHEDULED_TIME
    return json.dumps({**body, "scheduled_for": scheduled_for})


def job_message(body: str, sent_at: float) -> JobMessage:
    return JobMessage.from_body(body, sent_at=sent_at, secret=id_secret())


def test_a_firing_gets_an_id_from_schedule_and_scheduled_time(aws):
    message = job_message(_firing("2026-12-01T00:00:00Z"), sent_at=SENT_AT)

    assert message.id == ids.scheduled_id(id_secret(), "acme", "nightly", "2026-12-01T00:00:00Z")
    assert ids.verify(id_secret(), "acme", message.id).kind is ids.IdKind.SCHEDULED
    assert (message.schedule, message.scheduled_for, message.enqueued_at) == (
        "nightly",
        "2026-12-01T00:00:00Z",
        SENT_AT,
    )


def test_two_firings_of_one_occurrence_are_one_job_and_the_next_occurrence_another(aws):
    first = job_message(_firing("2026-12-01T00:00:00Z"), sent_at=SENT_AT)
    again = job_message(_firing("2026-12-01T00:00:00+00:00"), sent_at=SENT_AT + 30)
    tomorrow = job_message(_firing("2026-12-02T00:00:00Z"), sent_at=SENT_AT + 86_400)

    assert first.id == again.id
    assert tomorrow.id != first.id


def test_a_firing_template_is_the_job_message_without_id_or_enqueued_at():
    assert JobMessage.firing_template("acme", "nightly", JobSpec("echo", {"n": 1}, 3)) == (
        '{"v":1,"tenant":"acme","type":"echo","payload":{"n":1},"max_attempts":3,'
        '"schedule":"nightly","scheduled_for":"<aws.scheduler.scheduled-time>"}'
    )
    timed = JobMessage.firing_template("acme", "nightly", JobSpec("echo", None, 2, timeout_seconds=42))
    assert timed == (
        '{"v":1,"tenant":"acme","type":"echo","payload":null,"max_attempts":2,'
        '"schedule":"nightly","scheduled_for":"<aws.scheduler.scheduled-time>","timeout_seconds":42}'
    )


def test_a_firing_template_needs_its_attempts_decided():
    with pytest.raises(ValueError, match="max_attempts"):
        JobMessage.firing_template("acme", "nightly", JobSpec("echo"))


def test_an_unsubstituted_placeholder_falls_back_to_the_minute_sent(aws):
    # The embedded emulator passes the Input verbatim.
    assert scheduled_time(SCHEDULED_TIME, SENT_AT) == "2026-12-01T00:00:00Z"


def test_a_message_with_an_id_is_taken_as_it_is(aws):
    job_id = ids.timed_id(id_secret(), "acme")
    body = {"id": job_id, "tenant": "acme", "type": "echo", "payload": None, "max_attempts": 3, "enqueued_at": 1.0}
    assert job_message(json.dumps(body), sent_at=SENT_AT).id == job_id
