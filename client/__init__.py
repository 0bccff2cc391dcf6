"""A small Python client for the corral API (used by the tests, the smoke command and the benchmark)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import requests

FINISHED = ("succeeded", "dead")


class JobTimeout(AssertionError):
    pass


@dataclass
class Corral:
    api_url: str
    api_key: str
    session: requests.Session = field(default_factory=requests.Session)
    timeout: float = 10

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        headers = {**self._headers(), **kwargs.pop("headers", {})}
        return self.session.request(method, self.api_url + path, headers=headers, timeout=self.timeout, **kwargs)

    def enqueue(self, job_type: str, payload: Any = None, **options: Any) -> str:
        response = self.request("POST", "/v1/jobs", json={"type": job_type, "payload": payload, **options})
        if response.status_code != 202:
            raise AssertionError(f"enqueue answered {response.status_code}: {response.text}")
        return response.json()["id"]

    def job(self, job_id: str) -> dict[str, Any]:
        response = self.request("GET", f"/v1/jobs/{job_id}")
        if response.status_code != 200:
            raise AssertionError(f"GET job answered {response.status_code}: {response.text}")
        return response.json()

    def wait(self, job_id: str, statuses: tuple[str, ...] = FINISHED, timeout: float = 60) -> dict[str, Any]:
        """Poll (bounded) until the job reaches one of `statuses`."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job["status"] in statuses:
                return job
            if time.monotonic() > deadline:
                raise JobTimeout(f"job {job_id} still {job['status']!r} after {timeout:.0f}s: {job}")
            time.sleep(0.25)
