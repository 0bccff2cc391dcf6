"""The API handler in-process on moto: the key first, then the raw body (size, nesting, numbers), then fields.

Every answer here is an error body {"error", "message", ...} that never echoes the request.
"""

import base64
import json

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from functions.api import body as request_body
from local.events import FakeLambdaContext, http_api_event
from shared import settings
from shared.aws import eventbridge, queue
from shared.tenants import tenants


def _nested(levels: int, leaf=1):
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def _raw_event(method, path, text, api_key=None, content_type="application/json", base64_encoded=False):
    event = http_api_event(method, path, None, api_key)
    event["headers"] = {k: v for k, v in event["headers"].items() if k != "content-type"}
    if content_type:
        event["headers"]["content-type"] = content_type
    event["body"] = base64.b64encode(text.encode()).decode() if base64_encoded else text
    event["isBase64Encoded"] = base64_encoded
    return event


@pytest.fixture
def handler(aws):
    from functions.api.handler import handler

    return handler


@pytest.fixture
def api_key(aws):
    return tenants.create_key("acme")


@pytest.fixture
def call(handler, api_key):
    """POST/GET with the tenant's key; the body is JSON-encoded unless `raw` text is given."""

    def call(method, path, payload=None, *, raw=None, key=api_key, **event_options):
        if raw is None and payload is not None:
            raw = json.dumps(payload)
        event = _raw_event(method, path, raw, key, **event_options) if raw is not None else None
        event = event or http_api_event(method, path, None, key)
        response = handler(event, FakeLambdaContext())
        assert response["headers"]["Content-Type"].startswith("application/json"), response
        return response["statusCode"], json.loads(response["body"]), response["body"]

    return call


def _assert_error(body: dict, code: str) -> None:
    assert body["error"] == code
    assert isinstance(body["message"], str) and body["message"]


# --- authentication comes first --------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "payload"),
    [
        ("POST", "/v1/jobs", {"type": 5, "zzz": 1}),  # answers 422 with field details
        ("POST", "/v1/jobs", '{"payload":' + "[" * 2000 + "]" * 2000 + "}"),  # deep nesting answers 422, never 500
        ("POST", "/v1/jobs:batch", {"jobs": []}),
        ("POST", "/v1/schedules", {"name": "!"}),
        ("GET", "/v1/jobs/" + "x" * 500, None),
        ("GET", "/v1/no-such-route", None),
    ],
)
def test_without_a_key_every_route_answers_401_before_reading_the_body(call, method, path, payload):
    raw = payload if isinstance(payload, str) else None
    status, body, _ = call(method, path, None if raw else payload, raw=raw, key=None)

    assert status == 401
    _assert_error(body, "unauthorized")
    assert set(body) == {"error", "message"}


def test_the_openapi_document_needs_no_key_and_declares_every_error_a_route_can_answer(call):
    status, body, _ = call("GET", "/v1/openapi.json", key=None)

    assert status == 200
    assert "/v1/jobs" in body["paths"]
    assert body["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    for path, operations in body["paths"].items():
        for method, operation in operations.items():
            expected = {"401", "422", "500", "503"} | ({"400", "413"} if method == "post" else set())
            declared = {code for code, response in operation["responses"].items() if "ErrorOut" in json.dumps(response)}
            assert expected <= declared, (method, path, declared)
    assert "HTTPValidationError" not in json.dumps(body["paths"])


# --- size, nesting, numbers: checked on the raw body ------------------------------------------


def test_a_body_nested_2000_levels_is_422_naming_the_limit_not_500(call):
    status, body, _ = call("POST", "/v1/jobs", raw='{"type":"echo","payload":' + "[" * 2000 + "]" * 2000 + "}")

    assert status == 422
    _assert_error(body, "invalid_request")
    assert str(settings.MAX_PAYLOAD_DEPTH) in body["message"]


def test_a_payload_nested_exactly_to_the_limit_is_accepted_and_one_more_level_is_422(call):
    at_limit = call("POST", "/v1/jobs", {"type": "echo", "payload": _nested(settings.MAX_PAYLOAD_DEPTH)})
    over = call("POST", "/v1/jobs", {"type": "echo", "payload": _nested(settings.MAX_PAYLOAD_DEPTH + 1)})

    assert at_limit[0] == 202
    assert over[0] == 422
    assert over[1]["fields"][0]["field"] == "payload"
    assert "33 levels" in over[1]["message"]


def test_nesting_is_checked_in_batch_items_and_schedules_too(call, scheduler_env):
    deep = _nested(settings.MAX_PAYLOAD_DEPTH + 1)
    status, body, _ = call("POST", "/v1/jobs:batch", {"jobs": [{"type": "echo"}, {"type": "echo", "payload": deep}]})
    assert status == 207
    assert body["results"][1]["field"] == "jobs[1].payload"

    schedule = {"name": "deep", "expression": "rate(5 minutes)", "job": {"type": "echo", "payload": deep}}
    status, body, _ = call("POST", "/v1/schedules", schedule)
    assert status == 422
    assert body["fields"][0]["field"] == "job.payload"


def test_depth_counting_skips_brackets_inside_strings():
    text = json.dumps({"payload": ["[[[[{{{{" * 1000, {"a": "]]]]"}]})

    assert request_body.nesting_depth(text, 100) == 3


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"type":"echo","payload":NaN}', "payload"),
        ('{"type":"echo","payload":{"x":[1,Infinity]}}', "payload.x[1]"),
        ('{"type":"echo","payload":-Infinity}', "payload"),
        ('{"type":"echo","payload":1e400}', "payload"),
        ('{"type":"echo","payload":' + "9" * 5000 + "}", "body"),  # too long to convert: no path
        ('{"jobs":[{"type":"echo","payload":{"n":NaN}}]}', "jobs[0].payload.n"),
    ],
)
def test_non_finite_numbers_are_422_naming_where_they_are(call, raw, field):
    path = "/v1/jobs:batch" if raw.startswith('{"jobs"') else "/v1/jobs"

    status, body, _ = call("POST", path, raw=raw)

    assert status == 422
    _assert_error(body, "invalid_request")
    assert body["field"] == field


def test_a_body_over_the_request_limit_is_413_before_it_is_parsed(call):
    filler = "x" * (settings.MAX_PAYLOAD_BYTES - 100)
    count = settings.MAX_REQUEST_BODY_BYTES // len(filler) + 1
    jobs = {"jobs": [{"type": "echo", "payload": filler} for _ in range(count)]}

    status, body, _ = call("POST", "/v1/jobs:batch", jobs)

    assert count <= settings.MAX_BATCH_JOBS
    assert status == 413
    _assert_error(body, "payload_too_large")
    assert str(settings.MAX_REQUEST_BODY_BYTES) in body["message"]


def test_malformed_json_is_400(call):
    status, body, _ = call("POST", "/v1/jobs", raw='{"type": "echo",')

    assert status == 400
    _assert_error(body, "malformed_json")


# --- content types and echoes -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "base64_encoded"),
    [("application/x-www-form-urlencoded", True), ("application/x-www-form-urlencoded", False), (None, False)],
)
def test_a_body_is_read_as_json_whatever_its_content_type(call, aws, content_type, base64_encoded):
    raw = json.dumps({"type": "echo", "payload": {"via": "curl -d"}})

    status, body, _ = call("POST", "/v1/jobs", raw=raw, content_type=content_type, base64_encoded=base64_encoded)

    assert status == 202, body
    sent = aws["sqs"].receive_message(QueueUrl=aws["queue_url"])["Messages"][0]
    assert json.loads(sent["Body"])["payload"] == {"via": "curl -d"}


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "echo", "x" * 70_000: 1},  # an unknown field with a 70 KB name
        {"type": "y" * 70_000},
        {"type": "echo", "run_at": "z" * 70_000},
        {"jobs": [{"type": "echo", "q" * 70_000: 1}]},
        {"jobs": [{"type": "echo", "payload": {"q" * 70_000: "<aws.scheduler.x>"}, "delay_seconds": 86_400}]},
    ],
)
def test_an_error_never_echoes_the_body(call, payload, scheduler_env):
    path = "/v1/jobs:batch" if "jobs" in payload else "/v1/jobs"

    status, _, text = call("POST", path, payload)

    assert status in (207, 422)
    assert len(text) < 2_000
    assert "x" * 200 not in text and "y" * 200 not in text and "z" * 200 not in text and "q" * 200 not in text


# --- job-type payloads, delayed jobs and Scheduler ---------------------------------------------


@pytest.mark.parametrize("seconds", [1e308, -1, settings.MAX_SLEEP_SECONDS + 1, "5", True])
def test_sleep_is_bounded_at_enqueue(call, seconds):
    status, body, _ = call("POST", "/v1/jobs", {"type": "sleep", "payload": {"seconds": seconds}})

    assert status == 422
    assert body["fields"][0]["field"] == "payload.seconds"


def test_a_sleep_message_that_skipped_the_api_fails_cleanly_instead_of_overflowing():
    import logging

    from shared.jobs.job_types import JobContext, JobFailed, lookup

    context = JobContext(
        job_id="jt-x",
        attempt=1,
        max_attempts=1,
        deadline=float("inf"),
        logger=logging.LoggerAdapter(logging.getLogger()),
    )
    with pytest.raises(JobFailed, match="seconds"):
        lookup("sleep").run({"seconds": 1e308}, context)


def test_a_delayed_job_is_queued_on_get_long_past_the_retention_of_its_accept_time(call, scheduler_env, monkeypatch):
    import time

    status, body, _ = call("POST", "/v1/jobs", {"type": "echo", "delay_seconds": 30 * 86_400})
    assert status == 202
    job_id = body["id"]
    accepted = time.time()

    monkeypatch.setattr(time, "time", lambda: accepted + 15 * 86_400)  # day 15: before it is due
    assert call("GET", f"/v1/jobs/{job_id}")[1]["status"] == "queued"
    monkeypatch.setattr(time, "time", lambda: accepted + (30 + settings.MESSAGE_RETENTION_DAYS + 1) * 86_400)
    assert call("GET", f"/v1/jobs/{job_id}")[0] == 404  # due, then its message's retention ran out


@pytest.mark.parametrize("text", ["<aws.scheduler.schedule-arn>", "<AWS.Scheduler.execution-id>"])
def test_scheduler_keywords_are_refused_where_scheduler_would_rewrite_them(call, scheduler_env, text):
    far = settings.MAX_SQS_DELAY_SECONDS + 60
    delayed = call("POST", "/v1/jobs", {"type": "echo", "payload": {"a": [text]}, "delay_seconds": far})
    schedule = call(
        "POST",
        "/v1/schedules",
        {"name": "kw", "expression": "rate(5 minutes)", "job": {"type": "echo", "payload": {text: 1}}},
    )
    now = call("POST", "/v1/jobs", {"type": "echo", "payload": {"a": [text]}})  # SQS does not rewrite it

    assert delayed[0] == 422 and delayed[1]["fields"][0]["field"] == "payload.a[0]"
    assert schedule[0] == 422 and schedule[1]["fields"][0]["field"] == "job.payload"
    assert now[0] == 202


def test_a_schedule_starting_more_than_5_minutes_ago_is_422(call, scheduler_env):
    body = {"name": "old", "expression": "rate(5 minutes)", "job": {"type": "echo"}, "start": "2001-01-01T00:00:00Z"}

    status, answer, _ = call("POST", "/v1/schedules", body)

    assert status == 422
    assert answer["fields"][0]["field"] == "start"


def _scheduler_rejects(monkeypatch, message):
    real = eventbridge.client

    class Rejecting:
        def create_schedule(self, **params):
            raise ClientError({"Error": {"Code": "ValidationException", "Message": message}}, "CreateSchedule")

        def __getattr__(self, name):
            return getattr(real("scheduler"), name)

    monkeypatch.setattr(eventbridge, "client", lambda service: Rejecting())


def test_a_scheduler_validation_exception_is_a_422_not_a_retryable_503(call, scheduler_env, monkeypatch):
    # What AWS answers for a StartDate in the past (moto does not check it).
    _scheduler_rejects(monkeypatch, "The StartDate you specify cannot be earlier than 5 minutes ago.")

    status, body, _ = call(
        "POST", "/v1/schedules", {"name": "s", "expression": "rate(5 minutes)", "job": {"type": "echo"}}
    )
    delayed = call("POST", "/v1/jobs", {"type": "echo", "delay_seconds": 86_400})

    assert status == 422
    assert body["fields"][0]["field"] == "start"
    assert "5 minutes ago" not in body["message"]  # Scheduler's own words go to the log
    assert delayed[0] == 422 and delayed[1]["fields"][0]["field"] == "delay_seconds"
    assert call("GET", "/v1/schedules")[1]["schedules"] == []  # no record without a schedule


# --- what AWS says stays in the log -----------------------------------------------------------

_ACCESS_DENIED = (
    "User: arn:aws:sts::123456789012:assumed-role/corral-api/corral-api is not authorized to perform: sqs:SendMessage"
)


def test_a_503_and_a_207_item_carry_a_generic_reason_not_aws_text(call, aws, monkeypatch):
    def denied(*args, **kwargs):
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": _ACCESS_DENIED}}, "SendMessage")

    monkeypatch.setattr(queue, "send", denied)
    single = call("POST", "/v1/jobs", {"type": "echo"})

    class DeniedClient:
        def send_message_batch(self, **kwargs):
            denied()

    monkeypatch.setattr(queue, "client", lambda service: DeniedClient())
    batch = call("POST", "/v1/jobs:batch", {"jobs": [{"type": "echo"}]})

    assert single[0] == 503
    assert batch[0] == 207
    assert batch[1]["results"][0]["error"] == "unavailable"
    for text in (single[2], batch[2]):
        assert "arn:" not in text and "123456789012" not in text and "AccessDenied" not in text


_NOT_OBJECTS = st.one_of(
    st.lists(st.dictionaries(st.sampled_from(["type", "payload"]), st.sampled_from(["echo", 1, None])), max_size=3),
    st.text(max_size=5),
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
)


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_NOT_OBJECTS, path=st.sampled_from(["/v1/jobs", "/v1/jobs:batch", "/v1/schedules", "/v1/jobs:retry"]))
def test_a_body_that_is_not_an_object_answers_422_naming_body_and_enqueues_nothing(aws, call, value, path):
    status, body, _ = call("POST", path, value)
    assert status == 422, body
    assert body["field"] == "body"
    assert "/v1/jobs:batch" in body["message"]
    assert aws["sqs"].receive_message(QueueUrl=aws["queue_url"], WaitTimeSeconds=0).get("Messages", []) == []


def test_an_array_of_jobs_is_refused_whole_not_read_as_its_first_item(aws, call):
    status, body, _ = call("POST", "/v1/jobs", [{"type": "echo"}, {"type": "echo"}])
    assert (status, body["error"], body["field"]) == (422, "invalid_request", "body")
    assert aws["sqs"].receive_message(QueueUrl=aws["queue_url"]).get("Messages", []) == []
