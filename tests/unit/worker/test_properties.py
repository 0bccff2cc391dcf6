"""Generated messages through the worker Lambda's handler, in-process on moto.

(a) Any payload the API accepts comes back from `echo` as it went in.
(b) Whatever body a message has, the handler never raises, and a message whose job id verifies is
    either handed back (it will come again) or leaves a finished record: nothing vanishes.
"""

from __future__ import annotations

import json
import time
import uuid

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shared import ids
from shared import settings as corral_settings
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.store.id_secret import id_secret
from tests.unit.worker_harness import poll, record, send

PROPERTY_SETTINGS = settings(
    max_examples=40,
    deadline=None,  # moto's latency varies with the machine's load
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MAX_DEPTH = 32  # the API's nesting limit


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
accepted_payloads = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=40,
).filter(
    lambda payload: (
        _depth(payload) <= MAX_DEPTH
        and len(json.dumps(payload, separators=(",", ":")).encode()) <= corral_settings.MAX_PAYLOAD_BYTES
    )
)


def _nested(depth: int) -> object:
    payload: object = {"leaf": True}
    for level in range(depth - 1):
        payload = [payload] if level % 2 else {"k": payload}
    return payload


@PROPERTY_SETTINGS
@given(payload=accepted_payloads)
@example(payload=None)
@example(payload=_nested(MAX_DEPTH))
@example(payload="x" * (corral_settings.MAX_PAYLOAD_BYTES - 2))
@example(payload={"unicode": "żółw 🐢 \u0000 \u2028", "big": 2**70, "tiny": 5e-324, "neg": -0.0})
def test_any_accepted_payload_comes_back_from_echo_as_it_went_in(aws, payload):
    message = build_message("acme", JobRequest(JobSpec("echo", payload=payload)), time.time())
    send(aws, message.to_json())

    batch = poll(aws)

    assert batch is not None and batch.failed == []
    job = record(message.id)
    assert job.status is Status.SUCCEEDED
    assert job.result == payload


# Characters an SQS message body may hold.
sqs_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]).filter(
        lambda c: c in "\t\n\r" or (ord(c) >= 0x20 and not 0xFFFE <= ord(c) <= 0xFFFF)
    ),
    min_size=1,
    max_size=300,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


def _either(valid: st.SearchStrategy) -> st.SearchStrategy:
    """A field's value: mostly what the field takes, sometimes any JSON at all."""
    return st.one_of(valid, valid, json_values)


def message_bodies() -> st.SearchStrategy[str]:
    fresh_id = st.builds(lambda: ids.timed_id(id_secret(), "acme"))
    fresh_schedule = st.builds(lambda: f"s-{uuid.uuid4().hex[:10]}")
    message_like = st.fixed_dictionaries(
        {},
        optional={
            "v": _either(st.just(1)),
            "id": _either(fresh_id),
            "tenant": _either(st.sampled_from(["acme", "mallory"])),
            "type": _either(st.sampled_from(["echo", "fail", "no-such-type"])),
            "payload": json_values,
            "max_attempts": _either(st.integers(1, 25)),
            "enqueued_at": _either(st.floats(1, 2e9)),
            "schedule": _either(fresh_schedule),
            "scheduled_for": _either(st.sampled_from(["2026-12-01T00:00:00Z", "<aws.scheduler.scheduled-time>"])),
            "timeout_seconds": _either(st.integers(1, 900)),
            "extra": json_values,
        },
    ).map(json.dumps)
    return st.one_of(sqs_text, json_values.map(json.dumps), message_like)


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _verifiable_job(body: str, aws: dict) -> dict | None:
    """The record a message's job must end with, if the message names a job whose id verifies."""
    try:  # NaN and Infinity are not JSON: such a body is unreadable, buried in the DLQ with its reason
        data = json.loads(body, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("tenant"), str) or not data["tenant"]:
        return None
    if "id" in data:
        if isinstance(data["id"], str) and ids.verify(id_secret(), data["tenant"], data["id"]):
            return record_item(aws, data["id"])
        return None
    if isinstance(data.get("schedule"), str) and data["schedule"]:  # a firing: its id is derived
        runs = aws["dynamodb"].query(
            TableName=corral_settings.TABLE_NAME,
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :runs",
            ExpressionAttributeValues={":runs": {"S": f"runs#{data['tenant']}#{data['schedule']}"}},
        )["Items"]
        return runs[0] if runs else {}
    return None


def record_item(aws: dict, job_id: str) -> dict:
    key = {"pk": {"S": f"job#{job_id}"}}
    return aws["dynamodb"].get_item(TableName=corral_settings.TABLE_NAME, Key=key).get("Item", {})


@PROPERTY_SETTINGS
@given(body=message_bodies())
@example(body='{"tenant": "acme", "type": ["echo"], "schedule": "s-x"}')
@example(body='{"tenant": "acme", "schedule": "s-y", "type": "echo", "max_attempts": 1}')
@example(body='{"tenant": "acme", "schedule": "s-z", "type": "echo", "extra": Infinity}')
def test_whatever_arrives_the_handler_never_raises_and_a_verifiable_job_never_vanishes(aws, body):
    send(aws, body)

    batch = poll(aws)  # raises if the handler does

    assert batch is not None
    if batch.failed:
        return  # handed back: the message comes again (a job that failed with attempts left)
    item = _verifiable_job(body, aws)
    if item is not None:
        assert item, f"a verifiable job left no record: {body!r}"
        assert Status(item["status"]["S"]).finished, item
