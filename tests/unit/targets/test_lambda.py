"""`lambda` jobs and the allow-list: which tenant may invoke which function, what the function is told,
what a failed invoke tells the tenant, and that corral's own functions are never targets.

The Lambda client is replaced by a fake that records the invoke's arguments: what is under test is
what the worker sends and how it reads the answer, not Lambda.
"""

from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from shared import environment, settings
from shared.aws import lambda_clients
from shared.errors import InvalidRequest
from shared.jobs.enqueue import JobRequest, build_message
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.model.states import Status
from shared.schedules import definitions, lifecycle
from shared.store.jobs import job_store
from shared.targets import lambda_allowlist
from shared.worker.delivery import Delivery
from tests.unit.worker_harness import RetryLater, work

ALLOW_LIST = (
    "reports-*=acme|globex",
    "billing=acme",
    "public-echo=*",
    "arn:aws:lambda:eu-west-1:123456789012:function:etl=globex",
)


class FakeLambda:
    """Records each invoke; answers `response`, or raises `error`."""

    def __init__(self, response: bytes = b'{"ok": true}', error: Exception | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.response = response
        self.error = error

    def invoke(self, **arguments: Any) -> dict[str, Any]:
        self.calls.append(arguments)
        if self.error is not None:
            raise self.error
        return {"StatusCode": 200, "Payload": io.BytesIO(self.response)}

    def events(self) -> list[Any]:
        return [json.loads(call["Payload"]) for call in self.calls]


@pytest.fixture
def fake_lambda(aws, monkeypatch) -> FakeLambda:
    environment.change(lambda_targets=ALLOW_LIST)
    fake = FakeLambda()
    monkeypatch.setattr(lambda_clients, "reading", lambda seconds: fake)
    return fake


def _enqueue(tenant: str, payload: dict[str, Any]) -> JobMessage:
    return build_message(tenant, JobRequest(JobSpec("lambda", payload, 3)), time.time())


def _run(tenant: str, payload: dict[str, Any], job_id: str = "jt-lambda-1", max_attempts: int = 3) -> str:
    """Deliver a `lambda` job to the worker as if it had been queued (its checks at enqueue not run)."""
    message = JobMessage(
        id=job_id, tenant=tenant, type="lambda", payload=payload, max_attempts=max_attempts, enqueued_at=1.0
    )
    return work(message, Delivery(message_id="m1", body=message.to_json()))


# The allow-list's syntax ---------------------------------------------------------------------------


def test_an_entry_names_its_tenants_or_every_tenant_explicitly():
    assert lambda_allowlist.parse_entry("reports-*=acme|globex").tenants == {"acme", "globex"}
    assert lambda_allowlist.parse_entry(" etl = * ").tenants == {"*"}
    for refused, why in [
        ("reports-*", "name the tenants"),
        ("reports-*=", "name the tenants"),
        ("reports-*=acme|*", "stands alone"),
        ("reports-*=acme|bad name", "not a tenant name"),
        ("arn:aws:s3:::bucket=acme", "function name or an unqualified function ARN"),
    ]:
        with pytest.raises(lambda_allowlist.BadPattern, match=why):
            lambda_allowlist.parse_entry(refused)


@pytest.mark.parametrize(
    "pattern",
    [
        "*",
        "corral-*",
        "corral-worker",
        "corral-api",
        "Corral-Worker",
        "c*",
        "?orral-*",
        "*-worker",
        "corral-?????",
        "arn:aws:lambda:*:*:function:*",
        "arn:aws:lambda:eu-west-1:123456789012:function:corral-worker",
        settings.JOBS_FUNCTION,  # the jobs function runs customers' code for the worker
        "corral-job*",
        "*code",
    ],
)
def test_no_pattern_may_match_corrals_own_functions(pattern):
    with pytest.raises(lambda_allowlist.BadPattern, match="corral's own functions"):
        lambda_allowlist.check_pattern(pattern)


@pytest.mark.parametrize("pattern", ["reports-*", "corral", "corralx-*", "c?-*", "arn:aws:lambda:*:*:function:etl-*"])
def test_patterns_that_cannot_match_corrals_own_functions_are_accepted(pattern):
    assert lambda_allowlist.check_pattern(pattern) == pattern


# At enqueue: each tenant only its own functions ----------------------------------------------------


def test_a_tenant_may_enqueue_only_the_functions_the_allow_list_names_for_it(fake_lambda):
    for tenant, function in [
        ("acme", "reports-daily"),
        ("globex", "reports-daily:live"),
        ("acme", "billing"),
        ("acme", "public-echo"),
        ("anyone", "public-echo:3"),
        ("globex", "arn:aws:lambda:eu-west-1:123456789012:function:etl"),
    ]:
        _enqueue(tenant, {"function": function})
    for tenant, function in [
        ("mallory", "reports-daily"),
        ("globex", "billing"),
        ("acme", "arn:aws:lambda:eu-west-1:123456789012:function:etl"),
    ]:
        with pytest.raises(InvalidRequest, match="for this tenant") as refused:
            _enqueue(tenant, {"function": function})
        assert refused.value.field == "payload.function"


def test_the_api_answers_422_naming_payload_function_for_another_tenants_function(fake_lambda):
    from functions.api.handler import handler
    from local.events import FakeLambdaContext, http_api_event
    from shared.tenants import tenants

    body = {"type": "lambda", "payload": {"function": "billing", "input": {"account": "acme"}}}

    def post(tenant: str) -> dict[str, Any]:
        return handler(http_api_event("POST", "/v1/jobs", body, tenants.create_key(tenant)), FakeLambdaContext())

    assert post("acme")["statusCode"] == 202
    refused = post("mallory")
    assert refused["statusCode"] == 422
    answer = json.loads(refused["body"])
    assert (answer.get("field") or answer["fields"][0]["field"]) == "payload.function"


def test_a_schedule_of_a_lambda_job_is_checked_for_its_tenant(scheduler_env, fake_lambda):
    def request(name: str) -> definitions.ScheduleRequest:
        return definitions.ScheduleRequest(
            name=name, expression="rate(1 day)", job=JobSpec("lambda", {"function": "billing"}, 3)
        )

    lifecycle.create("acme", request("nightly"))
    with pytest.raises(InvalidRequest) as refused:
        lifecycle.create("globex", request("nightly"))

    assert refused.value.field == "job.payload.function"


@pytest.mark.parametrize(
    "function",
    [
        "corral-worker",
        "corral-api:live",
        "arn:aws:lambda:us-east-1:123456789012:function:corral-worker",
        settings.JOBS_FUNCTION,
        f"{settings.JOBS_FUNCTION}:1",
    ],
)
def test_corrals_own_functions_are_refused_at_enqueue_before_the_list_is_read(aws, function):
    environment.change(lambda_targets=("*=*",))  # an entry the synth refuses: the functions' check does not rely on it

    with pytest.raises(InvalidRequest, match="corral's own functions") as refused:
        _enqueue("acme", {"function": function})

    assert refused.value.field == "payload.function"


def test_a_partial_arn_is_not_a_target(aws):
    # Lambda reads `123456789012:function:corral-worker` as the worker; its first segment would match `*`.
    environment.change(lambda_targets=("*=*",))

    with pytest.raises(InvalidRequest, match="full function ARN") as refused:
        _enqueue("acme", {"function": "123456789012:function:corral-worker"})

    assert refused.value.field == "payload.function"


def test_the_input_is_an_object_without_corrals_own_field(fake_lambda):
    with pytest.raises(InvalidRequest) as forged:
        _enqueue("acme", {"function": "billing", "input": {"corral": {"tenant": "globex"}}})
    assert forged.value.field == "payload.input.corral"
    with pytest.raises(InvalidRequest) as not_an_object:
        _enqueue("acme", {"function": "billing", "input": [1, 2]})
    assert not_an_object.value.field == "payload.input"


# In the worker: checked again, and the tenant in the event -------------------------------------------


def test_the_function_is_told_the_tenant_the_job_and_the_attempt(fake_lambda):
    assert _run("acme", {"function": "billing", "input": {"account": "acme", "n": 1}}) == "succeeded"

    (call,) = fake_lambda.calls
    assert (call["FunctionName"], call["InvocationType"]) == ("billing", "RequestResponse")
    assert fake_lambda.events() == [
        {"account": "acme", "n": 1, "corral": {"tenant": "acme", "job_id": "jt-lambda-1", "attempt": 1}}
    ]
    assert job_store.get("jt-lambda-1").result == {"ok": True}


def test_no_input_is_an_event_with_only_corrals_field(fake_lambda):
    assert _run("globex", {"function": "reports-daily"}) == "succeeded"

    assert fake_lambda.events() == [{"corral": {"tenant": "globex", "job_id": "jt-lambda-1", "attempt": 1}}]


def test_an_input_naming_another_tenant_is_never_invoked(fake_lambda):
    # Queued without the API's check (a message from before it, or forged): the worker refuses it too.
    payload = {"function": "billing", "input": {"corral": {"tenant": "acme"}}}

    assert _run("mallory", payload) == "dead"

    assert fake_lambda.calls == []


def test_a_job_for_a_tenant_the_allow_list_does_not_name_is_dead_and_never_invoked(fake_lambda):
    assert _run("mallory", {"function": "reports-daily", "input": {"account": "acme"}}) == "dead"

    assert fake_lambda.calls == []
    record = job_store.get("jt-lambda-1")
    assert (record.status, record.attempts) == (Status.DEAD, 1)
    assert "not invoked" in record.error and "not a Lambda target this stack allows for this tenant" in record.error


def test_a_job_accepted_before_its_tenant_was_removed_from_the_list_is_dead_at_run(fake_lambda):
    message = _enqueue("globex", {"function": "reports-daily"})
    environment.change(lambda_targets=("reports-*=acme",))

    assert work(message, Delivery(message_id="m1", body=message.to_json())) == "dead"

    assert fake_lambda.calls == []


def test_no_entry_allows_corrals_own_functions_even_one_the_synth_would_refuse():
    allow_all = (lambda_allowlist.Entry("*", frozenset({"*"})),)
    assert lambda_allowlist.is_allowed("reports-daily", "acme", allow_all)
    for function in ["corral-worker", "corral-api:live", "arn:aws:lambda:eu-west-1:123456789012:function:corral-x"]:
        assert not lambda_allowlist.is_allowed(function, "acme", allow_all)


def test_an_allow_list_entry_that_does_not_parse_allows_nothing(aws):
    environment.change(lambda_targets=("*=*", "reports-*", "billing=acme"))

    assert lambda_allowlist.entries() == (lambda_allowlist.parse_entry("billing=acme"),)


def test_the_worker_refuses_its_own_functions_whatever_the_list_says(fake_lambda):
    environment.change(lambda_targets=("*=*",))
    forged_batch = {"Records": [{"messageId": "x", "receiptHandle": "x", "body": "{}"}]}

    assert _run("mallory", {"function": "corral-worker", "input": forged_batch}) == "dead"

    assert fake_lambda.calls == []
    assert "corral's own functions" in job_store.get("jt-lambda-1").error


def test_a_tenant_cannot_send_its_own_job_to_the_jobs_function(fake_lambda):
    # The jobs function runs whatever type and tenant its request names: only the worker may ask.
    environment.change(lambda_targets=("*=*",), jobs_function=settings.JOBS_FUNCTION)
    forged = {"type": "render_email", "payload": {}, "job_id": "jt-x", "tenant": "globex"}

    assert _run("mallory", {"function": settings.JOBS_FUNCTION, "input": forged}, job_id="jt-lambda-2") == "dead"

    assert fake_lambda.calls == []
    assert "corral's own functions" in job_store.get("jt-lambda-2").error


# What a failed invoke tells the tenant ----------------------------------------------------------------

_ARN = "arn:aws:lambda:us-east-1:123456789012:function:reports-missing"


def _aws_error(code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "Invoke")


def test_a_missing_function_is_dead_with_generic_text_and_no_arn(fake_lambda):
    fake_lambda.error = _aws_error("ResourceNotFoundException", f"Function not found: {_ARN}")

    assert _run("acme", {"function": "reports-missing"}) == "dead"

    error = job_store.get("jt-lambda-1").error
    assert "the function or its qualifier does not exist" in error
    assert "arn:" not in error and "123456789012" not in error and "Function not found" not in error


def test_a_throttle_is_retried_with_generic_text(fake_lambda):
    fake_lambda.error = _aws_error("TooManyRequestsException", f"Rate exceeded for {_ARN}")

    with pytest.raises(RetryLater):
        _run("acme", {"function": "reports-daily"})

    error = job_store.get("jt-lambda-1").error
    assert "the function was throttled" in error and "123456789012" not in error


def test_an_unknown_error_code_and_a_timeout_say_nothing_of_the_account(fake_lambda):
    fake_lambda.error = _aws_error("KMSAccessDeniedException", f"Lambda was unable to decrypt {_ARN}")
    with pytest.raises(RetryLater):
        _run("acme", {"function": "reports-daily"}, job_id="jt-lambda-kms")
    assert "123456789012" not in job_store.get("jt-lambda-kms").error

    fake_lambda.error = ReadTimeoutError(endpoint_url=f"https://lambda.us-east-1.amazonaws.com/functions/{_ARN}")
    with pytest.raises(RetryLater):
        _run("acme", {"function": "reports-daily"}, job_id="jt-lambda-timeout")
    error = job_store.get("jt-lambda-timeout").error
    assert "no answer from Lambda" in error and "123456789012" not in error


def test_an_invoke_reuses_a_kept_client_whose_read_timeout_covers_the_job(aws):
    # Made per invoke, a client cost ~40-100 ms of the worker's CPU per job (docs/decisions/customer-code-fence.md).
    first, second = lambda_clients.reading(50.3), lambda_clients.reading(61.0)
    assert first is second and first.meta.config.read_timeout == 64
    assert lambda_clients.reading(3.2).meta.config.read_timeout == 4
