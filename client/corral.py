"""`Corral`: the API client. Every method either returns what the API answered or raises a `CorralError`."""

from __future__ import annotations

import builtins
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, cast
from urllib.parse import quote

import requests

from . import errors, paging
from .durable import Events, Tokens
from .errors import CorralError
from .retrying import RetryPolicy, retry_after_seconds, retryable_exception, retryable_status
from .triggers import Triggers
from .types import (
    BATCH_FINISHED,
    FINISHED,
    Accepted,
    Batch,
    BatchPage,
    Callback,
    EnqueueOutcome,
    Job,
    JobPage,
    JobSpec,
    RetriedMany,
    Schedule,
    SchedulePage,
    Stats,
    Triggered,
)

BATCH_SIZE = 100  # POST /v1/jobs:batch takes at most this many jobs


def _when(value: datetime | float | str | None) -> str | None:
    """A time filter as the API takes it: ISO 8601 (a datetime or an epoch second is converted)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return datetime.fromtimestamp(float(value)).astimezone().isoformat()


def _given(body: dict[str, Any]) -> dict[str, Any]:
    """The body without the fields left as None (the API's default then applies)."""
    return {name: value for name, value in body.items() if value is not None}


class Corral:
    """A client of one corral API with one API key.

    >>> corral = Corral("https://api.example.com", "ck_...")
    >>> job_id = corral.enqueue("echo", {"hello": "world"})
    >>> corral.wait(job_id)["status"]
    'succeeded'

    Enqueues carry an idempotency key (one is generated when the caller gives none), so the SDK's
    own retries (connection errors, 429, 503; `retries` of them, with backoff and `Retry-After`)
    never enqueue a job twice.
    """

    def __init__(
        self,
        api_url: str,
        api_key: str,
        *,
        timeout: float = 10,
        retries: int = 4,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.policy = RetryPolicy(retries=retries)
        self.session = session or requests.Session()
        self._sleep = sleep
        self.schedules, self.triggers = Schedules(self), Triggers(self)
        self.batches = Batches(self)
        self.events, self.tokens = Events(self), Tokens(self)

    def _keyed(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """`body` with its idempotency key: the caller's, else a fresh one while the SDK retries (so a retry of
        a request that reached the API is answered as the first was)."""
        keyed = dict(body)
        if self.policy.retries and not keyed.get("idempotency_key"):
            keyed["idempotency_key"] = f"sdk-{uuid.uuid4()}"
        return keyed

    @classmethod
    def from_env(cls, **options: Any) -> Corral:
        """A client for CORRAL_API_URL with CORRAL_API_KEY (options as the constructor's)."""
        missing = [name for name in ("CORRAL_API_URL", "CORRAL_API_KEY") if not os.environ.get(name)]
        if missing:
            raise CorralError(f"set {' and '.join(missing)}", code="not_configured")
        return cls(os.environ["CORRAL_API_URL"], os.environ["CORRAL_API_KEY"], **options)

    # Transport ------------------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """One raw HTTP request with the key, no retries, no error mapping (tests, odd calls)."""
        headers = {"Authorization": f"Bearer {self.api_key}", **kwargs.pop("headers", {})}
        return self.session.request(method, self.api_url + path, headers=headers, timeout=self.timeout, **kwargs)

    def call(self, method: str, path: str, *, idempotent: bool, expect: tuple[int, ...] = (200,), **kwargs: Any) -> Any:
        """A request with retries; the JSON answer, or a CorralError. `idempotent`: safe to send twice."""
        retries = 0
        while True:
            wait: float | None = None
            try:
                response = self.request(method, path, **kwargs)
            except requests.RequestException as error:
                if retries >= self.policy.retries or not retryable_exception(error, idempotent=idempotent):
                    raise errors.ConnectionFailed(
                        f"no answer from {self.api_url}: {type(error).__name__}", code="connection_error"
                    ) from error
            else:
                if response.status_code in expect:
                    return response.json() if response.content else None
                wait = retry_after_seconds(response.headers.get("Retry-After"))
                refused = errors.from_answer(response.status_code, _json_or_none(response), wait)
                too_long = wait is not None and wait > self.policy.max_retry_after_seconds
                if (
                    retries >= self.policy.retries
                    or too_long
                    or not retryable_status(response.status_code, idempotent=idempotent)
                    or isinstance(refused, errors.QuotaExceeded)  # passes only once the tenant holds less
                ):
                    raise refused
            retries += 1
            self._sleep(self.policy.backoff(retries, wait))

    # Jobs -----------------------------------------------------------------------------------------

    def enqueue(self, job_type: str, payload: Any = None, **options: Any) -> str:
        """Enqueue one job; its id. Options: idempotency_key, delay_seconds, run_at, max_attempts, timeout_seconds,
        concurrency ({"key": ..., "limit": n}: at most n of this tenant's jobs with that key run at once),
        unique ({"key": ..., "until": "started" | "finished", "for_seconds"?: n}: while a job with that key waits,
        or until it ends, another is not enqueued and its id is the waiting job's), throttle ({"key": ..., "limit": n,
        "period_seconds": s}: at most n of this tenant's jobs with that key start in any s seconds), debounce
        (types.Debounce: a burst's last job runs), priority ("high"|"default"|"low": its lane), on_success/on_failure
        (a job body, enqueued once it succeeded/is dead; `parent` in its payload: its view; include_parent_payload)."""
        return self.enqueue_job({"type": job_type, "payload": payload, **options})["id"]

    def enqueue_job(self, spec: JobSpec | dict[str, Any]) -> Accepted:
        """The job's id and `queued`; or, where another job holds its unique key, that job's id and `duplicate`."""
        return cast(Accepted, self.call("POST", "/v1/jobs", idempotent=True, expect=(202, 200), json=self._keyed(spec)))

    def enqueue_many(
        self, jobs: Iterable[JobSpec | dict[str, Any]], *, on_chunk: Callable[[int], None] | None = None
    ) -> list[EnqueueOutcome]:
        """Enqueue any number of jobs, 100 per request; one outcome per job, in order.

        A job the API refuses has its error in its outcome and costs the others nothing; jobs the
        API could not queue for the moment ("unavailable") are sent again with the same key.
        `on_chunk(n)` is called after each request with the number of jobs it settled (progress bars).
        """
        specs = [self._keyed(job) for job in jobs]
        outcomes: list[EnqueueOutcome] = []
        for start in range(0, len(specs), BATCH_SIZE):
            chunk = specs[start : start + BATCH_SIZE]
            outcomes += self._enqueue_chunk(chunk, first_index=start)
            if on_chunk:
                on_chunk(len(chunk))
        return outcomes

    def _enqueue_chunk(self, chunk: list[dict[str, Any]], first_index: int) -> list[EnqueueOutcome]:
        settled: dict[int, EnqueueOutcome] = {}
        pending = list(range(len(chunk)))
        for retry in range(self.policy.retries + 1):
            answer = self.call(
                "POST", "/v1/jobs:batch", idempotent=True, expect=(202, 207), json={"jobs": [chunk[i] for i in pending]}
            )
            still_unavailable = []
            for position, result in enumerate(answer["results"]):
                index = pending[position]
                if result.get("status") in ("queued", "duplicate"):  # duplicate: the id of the job holding its key
                    settled[index] = EnqueueOutcome(
                        first_index + index, result["id"], duplicate=result["status"] == "duplicate"
                    )
                    continue
                error = errors.from_answer(
                    503 if result.get("error") == "unavailable" else 422,
                    {k: result.get(k) for k in ("error", "message", "field")},
                )
                settled[index] = EnqueueOutcome(first_index + index, None, error)
                if result.get("error") == "unavailable":
                    still_unavailable.append(index)
            if not still_unavailable or retry == self.policy.retries:
                break
            pending = still_unavailable
            self._sleep(self.policy.backoff(retry + 1))
        return [settled[i] for i in range(len(chunk))]

    def get(self, job_id: str) -> Job:
        return cast(Job, self.call("GET", f"/v1/jobs/{quote(job_id, safe='')}", idempotent=True))

    def pages(
        self,
        *,
        status: str | None = None,
        type: str | None = None,
        schedule: str | None = None,
        since: datetime | float | str | None = None,
        until: datetime | float | str | None = None,
        page_size: int | None = None,
        cursor: str | None = None,
    ) -> Iterator[JobPage]:
        """GET /v1/jobs page by page, newest first, following `next_cursor` until the last page."""
        query = {"status": status, "type": type, "schedule": schedule, "since": _when(since), "until": _when(until)}
        return paging.pages(self.call, "/v1/jobs", {**query, "limit": page_size}, cursor, JobPage.read)

    def list(self, *, max_items: int | None = None, **filters: Any) -> Iterator[Job]:
        """The tenant's jobs, newest first, fetched page by page as you iterate (filters as `pages`); at most
        `max_items`."""
        return paging.items(self.pages(**filters), lambda page: page.jobs, max_items)

    def wait(
        self, job_id: str, statuses: Iterable[str] = FINISHED, timeout: float = 60, poll_seconds: float = 0.25
    ) -> Job:
        """Poll (growing gently to 2 s between polls) until the job reaches one of `statuses`;
        raises WaitTimeout after `timeout` seconds."""
        wanted = tuple(statuses)
        deadline = time.monotonic() + timeout
        interval = poll_seconds
        while True:
            job = self.get(job_id)
            if job["status"] in wanted:
                return job
            if time.monotonic() > deadline:
                raise errors.WaitTimeout(
                    f"job {job_id} still {job['status']!r} after {timeout:.0f}s", job=cast(dict[str, Any], job)
                )
            self._sleep(min(interval, max(0.0, deadline - time.monotonic()) + 0.01))
            interval = min(interval * 1.5, 2.0)

    def cancel(self, job_id: str) -> Job:
        """Cancel a job that has not started (queued, delayed or waiting to retry); repeating it is harmless.
        A running or finished job raises Conflict."""
        return cast(Job, self.call("POST", f"/v1/jobs/{quote(job_id, safe='')}/cancel", idempotent=True))

    def retry(self, job_id: str) -> Accepted:
        """Run a dead or cancelled job again with a fresh attempt budget (Conflict if it is neither)."""
        return cast(
            Accepted, self.call("POST", f"/v1/jobs/{quote(job_id, safe='')}/retry", idempotent=False, expect=(202,))
        )

    def retry_dead(
        self, *, type: str | None = None, since: datetime | float | str | None = None, limit: int | None = None
    ) -> RetriedMany:
        """Retry the tenant's dead jobs matching the filter, up to the API's bound per call; `more`
        says whether another call would find more."""
        body = _given({"type": type, "since": _when(since), "limit": limit})
        return cast(RetriedMany, self.call("POST", "/v1/jobs:retry", idempotent=False, json=body))

    def stats(self, window_seconds: int | None = None) -> Stats:
        params = {"window_seconds": window_seconds} if window_seconds is not None else {}
        return cast(Stats, self.call("GET", "/v1/stats", idempotent=True, params=params))


class _Collection:
    """One of the API's collections (`/v1/<collection>/<name>`), called through the client's `call`."""

    collection: str

    def __init__(self, corral: Corral) -> None:
        self._corral = corral

    def _call(self, method: str, name: str = "", action: str = "", **kwargs: Any) -> Any:
        item = f"/{quote(name, safe='')}" if name else ""  # one path segment: a "/" in a name stays in it
        return self._corral.call(method, f"/v1/{self.collection}{item}{action}", **kwargs)


class Schedules(_Collection):
    """`corral.schedules`: recurring and one-time jobs (EventBridge Scheduler expressions)."""

    collection = "schedules"

    def create(
        self,
        name: str,
        expression: str,
        job_type: str,
        payload: Any = None,
        *,
        timezone: str | None = None,
        max_attempts: int | None = None,
        timeout_seconds: int | None = None,
        flexible_window_minutes: int | None = None,
        start: str | None = None,
        end: str | None = None,
        overlap: str | None = None,
        description: str | None = None,
        **flow: Any,
    ) -> Schedule:
        """E.g. `create("nightly", "cron(0 2 * * ? *)", "report", {"day": "yesterday"}, timezone="Europe/Paris")`.
        `overlap="skip"`: a run meeting a live earlier run is skipped. `flow`: each run's throttle, debounce, unique,
        priority (as a job's). QuotaExceeded at the tenant's schedule quota or firings budget."""
        job = {"type": job_type, "max_attempts": max_attempts, "timeout_seconds": timeout_seconds, **flow}
        body = {
            "name": name,
            "expression": expression,
            "timezone": timezone,
            "job": {**_given(job), "payload": payload},
            "flexible_window_minutes": flexible_window_minutes,
            "start": start,
            "end": end,
            "overlap": overlap,
            "description": description,
        }
        return cast(Schedule, self._call("POST", idempotent=False, expect=(201,), json=_given(body)))

    def pages(self, *, page_size: int | None = None, cursor: str | None = None) -> Iterator[SchedulePage]:
        """GET /v1/schedules page by page (by name), following `next_cursor` until the last page."""
        return paging.pages(self._corral.call, "/v1/schedules", {"limit": page_size}, cursor, SchedulePage.read)

    def list(self, *, max_items: int | None = None, page_size: int | None = None) -> Iterator[Schedule]:
        """The tenant's schedules by name, fetched page by page as you iterate; at most `max_items`."""
        return paging.items(self.pages(page_size=page_size), lambda page: page.schedules, max_items)

    def get(self, name: str) -> Schedule:
        """The schedule and its recent runs, newest first."""
        return cast(Schedule, self._call("GET", name, idempotent=True))

    def delete(self, name: str) -> None:
        """Delete the schedule (its runs stay). NotFound if there is none."""
        self._call("DELETE", name, idempotent=True)

    def update(self, name: str, **changes: Any) -> Schedule:
        """Change any of expression, timezone, job (a dict of the job fields to change: type, payload,
        max_attempts, timeout_seconds), flexible_window_minutes, start, end, overlap, description; a field
        given as None is cleared (start, end, description). E.g.
        `update("nightly", job={"payload": {"day": "today"}}, expression="cron(0 3 * * ? *)")`.
        InvalidRequest names a bad field, and the schedule stays as it was."""
        return cast(Schedule, self._call("PATCH", name, idempotent=True, json=changes))

    def pause(self, name: str, note: str | None = None) -> Schedule:
        """Stop it firing until `resume` (a paused schedule can still be triggered); `note` says why.
        Pausing a paused schedule changes nothing."""
        return cast(Schedule, self._call("POST", name, ":pause", idempotent=True, json=_given({"note": note})))

    def resume(self, name: str) -> Schedule:
        """Let a paused schedule fire again; resuming an enabled one changes nothing."""
        return cast(Schedule, self._call("POST", name, ":resume", idempotent=True))

    def backfill(self, name: str, start: datetime | str, end: datetime | str) -> builtins.list[dict[str, str]]:
        """Run the schedule's firings from `start` (included) to `end` (excluded, at the latest now) now, at
        most 1,000: [{"id", "scheduled_for"}], oldest first. Each run has its occurrence's id, so repeating a
        backfill (as the SDK's retries do) never runs one twice."""
        body = {"start": _when(start), "end": _when(end)}
        answer = self._call("POST", name, ":backfill", idempotent=True, expect=(202,), json=body)
        return cast(builtins.list[dict[str, str]], answer["runs"])

    def trigger(self, name: str, *, idempotency_key: str | None = None) -> Triggered:
        """Run the schedule's job now, as a run of the schedule: {"id", "status": "queued"}, or, under overlap
        "skip" while an earlier run is live, {"id", "status": "skipped", "reason"}. Carries an idempotency key
        (one is generated when none is given), so the SDK's retries never run it twice."""
        body = _given(self._corral._keyed({"idempotency_key": idempotency_key}))
        answer = self._call(
            "POST", name, ":trigger", idempotent="idempotency_key" in body, expect=(200, 202), json=body
        )
        return cast(Triggered, answer)


class Batches(_Collection):
    """`corral.batches`: jobs enqueued together and counted as one, with callbacks when they have ended."""

    collection = "batches"

    def create(
        self,
        jobs: Iterable[JobSpec | dict[str, Any]],
        *,
        on_complete: Callback | dict[str, Any] | None = None,
        on_success: Callback | dict[str, Any] | None = None,
        description: str | None = None,
        idempotency_key: str | None = None,
    ) -> Accepted:
        """Enqueue up to 1,000 jobs as a batch: {"id", "status": "running", "total"}. `on_complete` runs once
        every job has ended, `on_success` once all succeeded; each gets `batch` (the batch's view) in its
        payload. One invalid job refuses the whole batch (InvalidRequest naming `jobs[i].field`). Retried
        with the same idempotency key (one is made if not given), so a retry never makes a second batch."""
        body = {
            "jobs": [dict(job) for job in jobs],
            "on_complete": on_complete,
            "on_success": on_success,
            "description": description,
            "idempotency_key": idempotency_key,
        }
        return cast(
            Accepted, self._call("POST", idempotent=True, expect=(201,), json=_given(self._corral._keyed(body)))
        )

    def get(self, batch_id: str) -> Batch:
        return cast(Batch, self._call("GET", batch_id, idempotent=True))

    def jobs(self, batch_id: str) -> builtins.list[str]:
        """The ids of the batch's jobs, in the order they were given."""
        return cast(builtins.list[str], self._call("GET", batch_id, "/jobs", idempotent=True)["jobs"])

    def pages(
        self, *, status: str | None = None, page_size: int | None = None, cursor: str | None = None
    ) -> Iterator[BatchPage]:
        """GET /v1/batches page by page, newest first, following `next_cursor` until the last page."""
        query = {"status": status, "limit": page_size}
        return paging.pages(self._corral.call, "/v1/batches", query, cursor, BatchPage.read)

    def list(
        self, *, status: str | None = None, max_items: int | None = None, page_size: int | None = None
    ) -> Iterator[Batch]:
        """The tenant's batches, newest first (optionally of one status), fetched page by page as you iterate;
        at most `max_items`."""
        return paging.items(self.pages(status=status, page_size=page_size), lambda page: page.batches, max_items)

    def cancel(self, batch_id: str) -> Batch:
        """Cancel the batch's jobs that have not started; it runs no callback. Repeating it is harmless; a
        batch that already finished raises Conflict (409) and stays as it ended."""
        return cast(Batch, self._call("POST", batch_id, "/cancel", idempotent=True))

    def wait(self, batch_id: str, timeout: float = 120, poll_seconds: float = 0.5) -> Batch:
        """Poll until the batch has ended (succeeded, completed_with_failures or cancelled with no job
        pending); raises WaitTimeout after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            batch = self.get(batch_id)
            if batch["status"] in BATCH_FINISHED and batch["pending"] == 0:
                return batch
            if time.monotonic() > deadline:
                raise errors.WaitTimeout(
                    f"batch {batch_id} still {batch['status']!r} ({batch['pending']} pending) after {timeout:.0f}s",
                    job=cast(dict[str, Any], batch),
                )
            self._corral._sleep(poll_seconds)


def _json_or_none(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


__all__ = ["BATCH_SIZE", "Batches", "Corral", "Schedules"]
