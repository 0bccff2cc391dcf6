"""POST /v1/jobs:batch through the HTTP API: all accepted jobs run; bad items are reported alone."""

import time

from shared import settings
from tests.e2e.helpers import finished_jobs


def test_a_batch_of_100_jobs_is_accepted_and_every_job_runs_once(api):
    jobs = [{"type": "echo", "payload": {"n": n}} for n in range(settings.MAX_BATCH_JOBS)]

    response = api.request("POST", "/v1/jobs:batch", json={"jobs": jobs})

    assert response.status_code == 202, response.text
    body = response.json()
    assert (body["accepted"], body["rejected"]) == (100, 0)
    ids = [result["id"] for result in body["results"]]
    assert len(set(ids)) == 100
    done = finished_jobs(api, ids, timeout=90)
    assert {job["status"] for job in done.values()} == {"succeeded"}
    assert {job["attempts"] for job in done.values()} == {1}
    assert sorted(job["result"]["n"] for job in done.values()) == list(range(100))


def test_one_invalid_job_is_reported_by_field_and_the_others_run(api):
    jobs = [{"type": "echo", "payload": n} for n in range(5)]
    jobs[2] = {"type": "echo", "max_attempts": 0}

    response = api.request("POST", "/v1/jobs:batch", json={"jobs": jobs})

    assert response.status_code == 207, response.text
    results = response.json()["results"]
    assert results[2]["status"] == "rejected"
    assert results[2]["error"] == "invalid_request"
    assert results[2]["field"] == "jobs[2].max_attempts"
    accepted = [result["id"] for index, result in enumerate(results) if index != 2]
    done = finished_jobs(api, accepted, timeout=90)
    assert sorted(job["result"] for job in done.values()) == [0, 1, 3, 4]


def test_more_than_100_jobs_is_422_and_nothing_is_enqueued(api):
    too_many = [{"type": "echo", "idempotency_key": f"too-many-{time.time_ns()}-{n}"} for n in range(101)]

    response = api.request("POST", "/v1/jobs:batch", json={"jobs": too_many})

    assert response.status_code == 422
    assert response.json()["error"] == "invalid_request"
    assert "jobs" in response.json()["message"]
