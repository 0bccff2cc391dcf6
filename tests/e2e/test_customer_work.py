"""Customers' own work on the deployed stack: the example job package (run in the jobs function), Lambda
targets, and real timeouts."""

import io
import json
import time
import zipfile

import pytest
import requests

from local.deploy import DEMO_TENANT
from shared import settings
from tests.e2e.helpers import eventually

# The target echoes its input, or fails like a function with a bug when asked to.
_TARGET_SOURCE = """
def handler(event, context):
    if isinstance(event, dict) and event.get("fail"):
        raise ValueError("asked to fail")
    return {"got": event}
"""


@pytest.fixture(scope="module", autouse=True)
def _warm_api(api):
    """The first enqueue may meet the API's cold start: not under test here."""

    def accepted() -> bool:
        try:
            return api.request("POST", "/v1/jobs", json={"type": "echo"}).status_code == 202
        except requests.RequestException:
            return False

    eventually(accepted, timeout=60, interval=1, message="the API to accept a job")


def _field(error: dict) -> str:
    """The field a 4xx names: `field`, or the first of `fields`."""
    return error.get("field") or error["fields"][0]["field"]


def test_the_example_packages_jobs_run(api):
    rendered = api.enqueue("render_email", {"markdown": "# Invoice\n\nPaid: **yes**"})
    flaky = api.enqueue("sync_contacts", {"busy_attempts": 1})

    rendered_job = api.wait(rendered, timeout=60)
    flaky_job = api.wait(flaky, timeout=60)

    assert rendered_job["status"] == "succeeded", rendered_job
    assert "<h1>Invoice</h1>" in rendered_job["result"]["html"]
    assert "<strong>yes</strong>" in rendered_job["result"]["html"]
    assert rendered_job["result"]["idempotency_key"] == rendered
    assert flaky_job["status"] == "succeeded", flaky_job
    assert flaky_job["attempts"] == 2
    assert flaky_job["result"] == {"synced_on_attempt": 2}


def _job_log_lines(deployed, function: str, job_id: str, since: float) -> list[dict]:
    """The JSON lines of `function`'s log group that name the job."""
    configuration = deployed.aws("lambda").get_function_configuration(FunctionName=function)
    group = configuration.get("LoggingConfig", {}).get("LogGroup") or f"/aws/lambda/{function}"
    events = deployed.aws("logs").filter_log_events(
        logGroupName=group, filterPattern=f'"{job_id}"', startTime=int(since * 1000)
    )["events"]
    lines = []
    for event in events:
        try:
            lines.append(json.loads(event["message"]))
        except ValueError:
            continue
    return lines


def test_a_customers_job_runs_in_the_jobs_function_not_in_the_worker(api, deployed):
    deployed.require_aws()  # reads the functions' logs
    since = time.time() - 5
    job_id = api.enqueue("render_email", {"markdown": "fenced"})
    assert api.wait(job_id, timeout=60)["status"] == "succeeded"

    in_jobs_function = eventually(  # log lines arrive after the invocation that wrote them
        lambda: _job_log_lines(deployed, settings.JOBS_FUNCTION, job_id, since),
        timeout=20,
        interval=1,
        message="a line of the job in the jobs function's log",
    )

    messages = {line.get("message") for line in in_jobs_function if line.get("job_id") == job_id}
    assert {"rendered", "ran"} <= messages  # the job's own line (emails.py) and the function's
    in_worker = _job_log_lines(deployed, settings.WORKER_FUNCTION, job_id, since)
    assert not [line for line in in_worker if line.get("message") == "rendered"]


def test_a_customer_types_payload_check_runs_at_enqueue(api):
    response = api.request("POST", "/v1/jobs", json={"type": "render_email", "payload": {"markdown": 3}})

    assert response.status_code == 422
    assert _field(response.json()) == "payload.markdown"


def test_a_job_past_its_timeout_is_retried_and_its_batch_mates_are_unaffected(api):
    jobs = [{"type": "sleep", "payload": {"seconds": 10}, "timeout_seconds": 2, "max_attempts": 2}]
    jobs += [{"type": "echo", "payload": {"n": n}} for n in range(5)]
    response = api.request("POST", "/v1/jobs:batch", json={"jobs": jobs})
    assert response.status_code == 202, response.text
    slow, *mates = [result["id"] for result in response.json()["results"]]

    finished_mates = [api.wait(job_id, timeout=60) for job_id in mates]
    slow_job = api.wait(slow, timeout=60)

    # Batch-mates ran once, not held behind the slow job: each finished before the slow job's last
    # attempt ended (held for the queue's visibility timeout, 35 s here, they would finish long after).
    assert [job["status"] for job in finished_mates] == ["succeeded"] * 5
    assert [job["attempts"] for job in finished_mates] == [1] * 5
    assert max(job["finished_at"] for job in finished_mates) < slow_job["finished_at"]
    assert slow_job["status"] == "dead"
    assert slow_job["attempts"] == 2
    assert slow_job["error"] == "timed out after 2 s"


def test_a_timeout_above_the_types_maximum_is_refused(api):
    response = api.request("POST", "/v1/jobs", json={"type": "echo", "timeout_seconds": 901})

    assert response.status_code == 422
    assert _field(response.json()) == "timeout_seconds"


@pytest.fixture(scope="module")
def lambda_target(deployed, lambda_target_name):
    if not deployed.emulated:
        pytest.skip("creates its target function in the embedded emulator")
    lambda_ = deployed.aws("lambda")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("target.py", _TARGET_SOURCE)
    lambda_.create_function(
        FunctionName=lambda_target_name,
        Runtime="python3.11",
        Role="arn:aws:iam::000000000000:role/corral-e2e-target",
        Handler="target.handler",
        Code={"ZipFile": archive.getvalue()},
        Timeout=10,
    )
    yield lambda_target_name
    lambda_.delete_function(FunctionName=lambda_target_name)


def test_a_lambda_job_invokes_an_allowed_function_and_records_its_response(api, lambda_target):
    job_id = api.enqueue("lambda", {"function": lambda_target, "input": {"order": 42}})

    job = api.wait(job_id, timeout=60)

    assert job["status"] == "succeeded", job
    # The event is the input, with the calling tenant, the job and the attempt added by corral.
    caller = {"tenant": DEMO_TENANT, "job_id": job_id, "attempt": 1}
    assert job["result"] == {"got": {"order": 42, "corral": caller}}


def test_a_lambda_job_of_a_tenant_the_allow_list_does_not_name_is_422(other_tenant_api, lambda_target):
    response = other_tenant_api.request(
        "POST", "/v1/jobs", json={"type": "lambda", "payload": {"function": lambda_target, "input": {}}}
    )

    assert response.status_code == 422
    assert _field(response.json()) == "payload.function"


def test_a_lambda_function_error_fails_the_attempt_and_is_retried(api, lambda_target):
    job_id = api.enqueue("lambda", {"function": lambda_target, "input": {"fail": True}}, max_attempts=2)

    job = api.wait(job_id, timeout=60)

    assert job["status"] == "dead", job
    assert job["attempts"] == 2
    assert "function error" in job["error"]
    assert "asked to fail" in job["error"]


def test_a_lambda_job_for_a_function_the_stack_does_not_allow_is_422(api):
    response = api.request(
        "POST", "/v1/jobs", json={"type": "lambda", "payload": {"function": "corral-worker", "input": {}}}
    )

    assert response.status_code == 422
    body = response.json()
    assert _field(body) == "payload.function"
    assert "corral:lambda_targets" in body["message"]
