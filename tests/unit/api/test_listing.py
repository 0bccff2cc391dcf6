"""Listing, stats and the cancel and retry routes against moto, through the API handler in-process."""

import base64
import contextlib
import json
import time
from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from local.events import FakeLambdaContext, http_api_event
from shared import settings
from shared.errors import InvalidRequest
from shared.jobs import enqueue, listing, stats
from shared.jobs.enqueue import JobRequest
from shared.model.message import JobMessage
from shared.model.spec import JobSpec
from shared.store.jobs import job_index, job_items
from shared.tenants import tenants
from shared.worker.delivery import Delivery
from tests.unit.worker_harness import RetryLater, work


def _run(job_type="echo", payload=None, tenant="acme", enqueued_at=None, **options) -> JobMessage:
    """Enqueue and deliver once (the queue itself is not read: the message is handed to the worker)."""
    message = enqueue.build_message(
        tenant, JobRequest.from_fields({"type": job_type, "payload": payload, **options}), time.time()
    )
    if enqueued_at is not None:
        message = JobMessage.from_dict({**message.__dict__, "enqueued_at": enqueued_at})
    with contextlib.suppress(RetryLater):
        work(message, Delivery(message_id=f"m-{message.id}", body=message.to_json()))
    return message


@pytest.fixture
def call_api(aws):
    from functions.api.handler import handler

    keys = {"acme": tenants.create_key("acme"), "other": tenants.create_key("other")}

    def call(method, path, body=None, query=None, tenant="acme"):
        event = http_api_event(method, path, body, keys[tenant])
        if query:
            event["rawQueryString"] = urlencode(query)
            event["queryStringParameters"] = {k: str(v) for k, v in query.items()}
        response = handler(event, FakeLambdaContext())
        return response["statusCode"], json.loads(response["body"])

    return call


def _pages(call_api, query, tenant="acme", bound=20):
    pages = []
    cursor = None
    for _ in range(bound):
        status, body = call_api("GET", "/v1/jobs", query=query | ({"cursor": cursor} if cursor else {}), tenant=tenant)
        assert status == 200, body
        pages.append(body)
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
    raise AssertionError("more pages than the bound")


def test_list_pages_through_every_job_newest_first_without_overlap(call_api):
    base = time.time() - 60
    ran = [_run(payload={"n": n}, enqueued_at=base + n) for n in range(7)]
    _run(tenant="other")

    pages = _pages(call_api, {"limit": 3})

    assert [len(page["jobs"]) for page in pages] == [3, 3, 1]
    listed = [job["id"] for page in pages for job in page["jobs"]]
    assert listed == [message.id for message in reversed(ran)]
    first = pages[0]["jobs"][0]
    assert first["status"] == "succeeded" and first["max_attempts"] == 3 and first["type"] == "echo"
    assert "result" not in first and "payload" not in first  # list items: GET /v1/jobs/{id} has them
    assert "no record" in pages[0]["note"]


def test_list_filters_by_status_type_and_time(call_api):
    base = time.time() - 600
    dead = _run("fail", {"times": 9}, max_attempts=1, enqueued_at=base)
    retrying = _run("fail", {"times": 1}, enqueued_at=base + 100)
    ok = _run("echo", enqueued_at=base + 200)

    def ids(query):
        return [job["id"] for page in _pages(call_api, query) for job in page["jobs"]]

    assert ids({"status": "dead"}) == [dead.id]
    assert ids({"status": "failed"}) == [retrying.id]
    assert ids({"type": "fail"}) == [retrying.id, dead.id]
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base + 50))
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base + 150))
    assert ids({"since": since}) == [ok.id, retrying.id]
    assert ids({"since": since, "until": until}) == [retrying.id]


def test_a_filtered_page_reads_at_most_the_budget_and_hands_back_a_cursor(aws, monkeypatch):
    monkeypatch.setattr(settings, "JOBS_INDEX_SHARDS", 2)
    base = time.time() - 60
    dead = _run("fail", {"times": 9}, max_attempts=1, enqueued_at=base)
    for n in range(12):
        _run(enqueued_at=base + 1 + n)

    first = listing.read_index("acme", {"status": "dead"}, since=None, until=None, before=None, want=10, read_budget=4)
    assert (first.items, first.read) == ([], 4)
    assert first.next_before is not None
    pages = [first]
    for _ in range(10):
        if pages[-1].next_before is None:
            break
        pages.append(
            listing.read_index(
                "acme", {"status": "dead"}, since=None, until=None, before=pages[-1].next_before, want=10, read_budget=4
            )
        )
    assert [item["pk"]["S"] for page in pages for item in page.items] == [f"job#{dead.id}"]
    assert pages[-1].next_before is None


class _FakeIndex:
    """An in-memory index with DynamoDB's Query semantics: Limit counts entries read before the
    filter, LastEvaluatedKey whenever Limit stopped the read."""

    def __init__(self, entries):
        self.entries = entries  # (shard, sort key, matches filter)

    def query(self, tenant, shard, *, oldest_sort_key, newest_sort_key, start_after, limit, filters=None, **_):
        rows = sorted(
            (e for e in self.entries if e[0] == shard and oldest_sort_key <= e[1] <= newest_sort_key),
            key=lambda e: e[1],
            reverse=True,
        )
        if start_after:
            rows = [e for e in rows if e[1] < start_after["gsi2sk"]["S"]]
        read = rows[:limit]
        items = [{"pk": {"S": f"job#{e[1]}"}, "gsi2sk": {"S": e[1]}} for e in read if e[2] or not filters]
        last = {"gsi2sk": {"S": read[-1][1]}} if len(read) == limit and read else None
        return job_index.IndexPage(items=items, last_key=last, read=len(read))


@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10**6), st.booleans()), max_size=60),
    st.integers(1, 5),
    st.integers(1, 12),
    st.integers(2, 30),
    st.booleans(),
)
def test_paging_the_merged_partitions_returns_each_matching_entry_once_newest_first(
    entries, shards, want, budget, filtered
):
    """However entries spread over partitions, and whatever the page size and read budget."""
    from unittest import mock

    index = _FakeIndex([(shard % shards, f"{ms:013d}#j{i}", match) for i, (shard, ms, match) in enumerate(entries)])
    expected = sorted((e[1] for e in index.entries if e[2] or not filtered), reverse=True)
    filters = {"status": "dead"} if filtered else {}
    got, before = [], None
    with (
        mock.patch.object(job_index, "query_jobs_index", index.query),
        mock.patch.object(settings, "JOBS_INDEX_SHARDS", shards),
    ):
        for _ in range(200):
            page = listing.read_index(
                "t", filters, since=None, until=None, before=before, want=want, read_budget=budget
            )
            assert len(page.items) <= want
            got += [item["gsi2sk"]["S"] for item in page.items]
            before = page.next_before
            if before is None:
                break
    assert got == expected


def test_a_tampered_cursor_is_a_422_and_a_cursor_cannot_reach_another_tenant(call_api):
    _run(tenant="other")
    mine = [_run() for _ in range(3)]
    status, body = call_api("GET", "/v1/jobs", query={"limit": 1})
    cursor = body["next_cursor"]

    for bad in ("not-a-cursor!", cursor[:-3], base64.urlsafe_b64encode(b"1:123#x").decode(), "A" * 40):
        status, body = call_api("GET", "/v1/jobs", query={"cursor": bad})
        assert status == 422, (bad, body)
        assert body["field"] == "cursor"
    # Another tenant's cursor positions only within the caller's own jobs.
    status, body = call_api("GET", "/v1/jobs", query={"cursor": cursor}, tenant="other")
    assert status == 200
    assert all(job["id"] not in {m.id for m in mine} for job in body["jobs"])


@given(st.text(max_size=200) | st.binary(max_size=150).map(lambda raw: base64.urlsafe_b64encode(raw).decode()))
def test_any_cursor_decodes_to_an_index_position_or_is_refused(cursor):
    try:
        before = listing.decode_cursor(cursor)
    except InvalidRequest as error:
        assert error.field == "cursor"
        return
    assert listing._SORT_KEY.fullmatch(before)


@given(st.floats(min_value=0, max_value=4e12 / 1000), st.from_regex(r"[A-Za-z0-9_-]{1,128}", fullmatch=True))
def test_a_cursor_names_the_position_it_was_made_from(enqueued_at, job_id):
    position = job_items.index_sort_key(enqueued_at, job_id)

    assert listing.decode_cursor(listing.encode_cursor(position)) == position


@pytest.mark.parametrize(
    ("query", "field"),
    [({"status": "lost"}, "status"), ({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"since": "x"}, "since")],
)
def test_bad_list_parameters_are_422_naming_the_field(call_api, query, field):
    status, body = call_api("GET", "/v1/jobs", query=query)

    assert status == 422
    assert body["error"] == "invalid_request"
    assert field in body["fields"][0]["field"]


def test_until_before_since_is_a_422(call_api):
    status, body = call_api("GET", "/v1/jobs", query={"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"})
    assert (status, body["field"]) == (422, "until")


def test_cancel_retry_and_bulk_retry_routes(call_api, aws):
    queued = enqueue.enqueue("acme", JobRequest(JobSpec("echo")))
    status, body = call_api("POST", f"/v1/jobs/{queued.id}/cancel")
    assert (status, body["status"], body["id"]) == (200, "cancelled", queued.id)
    assert call_api("POST", f"/v1/jobs/{queued.id}/cancel") == (200, body)
    status, body = call_api("POST", f"/v1/jobs/{queued.id}/cancel", tenant="other")
    assert (status, body["error"]) == (404, "not_found")

    done = _run()
    status, body = call_api("POST", f"/v1/jobs/{done.id}/cancel")
    assert (status, body["error"]) == (409, "conflict")
    status, body = call_api("POST", f"/v1/jobs/{done.id}/retry")
    assert (status, body["error"]) == (409, "conflict")

    dead = _run("fail", {"times": 1}, max_attempts=1)
    assert call_api("POST", f"/v1/jobs/{dead.id}/retry") == (202, {"id": dead.id, "status": "queued"})
    status, view = call_api("GET", f"/v1/jobs/{dead.id}")
    assert (view["status"], view["retries"], view["payload"]) == ("queued", 1, {"times": 1})

    more_dead = [_run("fail", {"times": 9}, max_attempts=1).id for _ in range(2)]
    status, body = call_api("POST", "/v1/jobs:retry", {"type": "fail", "limit": 1})
    assert (status, body["retried"], body["more"]) == (200, 1, True)
    status, body = call_api("POST", "/v1/jobs:retry", {})
    assert (body["retried"], body["more"], body["ids"]) == (1, False, more_dead[:1])
    status, body = call_api("POST", "/v1/jobs:retry", {"limit": settings.BULK_RETRY_MAX + 1})
    assert (status, body["fields"][0]["field"]) == (422, "limit")


def test_stats_count_what_the_store_holds(call_api):
    now = time.time()
    for n in range(4):
        _run(enqueued_at=now - 30 - n)
    _run("fail", {"times": 9}, max_attempts=1, enqueued_at=now - 20)
    _run("fail", {"times": 1}, enqueued_at=now - 10)
    _run(enqueued_at=now - 7200)  # outside the window and the hour

    figures = stats.tenant_stats("acme", 3600, now=time.time())

    assert figures.counts["succeeded"] == 4
    assert (figures.counts["dead"], figures.counts["failed"], figures.counts["cancelled"]) == (1, 1, 0)
    assert len(figures.per_minute) == 60
    assert sum(minute["enqueued"] for minute in figures.per_minute) == 6
    assert sum(minute["succeeded"] for minute in figures.per_minute) == 4
    assert sum(minute["dead"] for minute in figures.per_minute) == 1
    assert sum(minute["failed"] for minute in figures.per_minute) == 1
    assert figures.enqueue_to_run_ms["count"] == 6
    assert figures.enqueue_to_run_ms["p50"] >= 7_000  # started now, enqueued >= 10 s ago (back-dated here)
    assert figures.sampled is False

    status, body = call_api("GET", "/v1/stats", query={"window_seconds": 60})
    assert status == 200
    assert body["counts"]["succeeded"] == 4
    assert "job store" in body["source"]
    status, body = call_api("GET", "/v1/stats", query={"window_seconds": 0})
    assert status == 422


def test_stats_say_when_they_are_sampled(aws, monkeypatch):
    monkeypatch.setattr(settings, "STATS_MAX_RECORDS", 3)
    for _ in range(5):
        _run()

    figures = stats.tenant_stats("acme", 3600)

    assert (figures.records_read, figures.sampled, figures.counts["succeeded"]) == (3, True, 3)


def test_stats_are_answered_from_a_read_made_moments_ago(call_api, monkeypatch):
    _run()
    assert call_api("GET", "/v1/stats", query={"window_seconds": 60})[1]["counts"]["succeeded"] == 1
    _run()
    assert call_api("GET", "/v1/stats", query={"window_seconds": 60})[1]["counts"]["succeeded"] == 1
    assert call_api("GET", "/v1/stats", query={"window_seconds": 61})[1]["counts"]["succeeded"] == 2  # its own read
    assert call_api("GET", "/v1/stats", query={"window_seconds": 60}, tenant="other")[1]["counts"]["succeeded"] == 0

    monkeypatch.setattr(settings, "STATS_CACHE_SECONDS", 0)
    assert call_api("GET", "/v1/stats", query={"window_seconds": 60})[1]["counts"]["succeeded"] == 2


def test_reads_of_a_tenants_whole_index_are_metered_and_other_reads_are_not(call_api, monkeypatch):
    # L-h: a loop of stats or filtered listings (up to 5,000 / 1,000 index entries each) would throttle
    # the index every tenant shares.
    monkeypatch.setattr(settings, "HEAVY_READS_BURST", 3)
    monkeypatch.setattr(settings, "HEAVY_READS_PER_SECOND", 0.01)
    answers = [call_api("GET", "/v1/stats", query={"window_seconds": 60 + n}) for n in range(2)]
    answers.append(call_api("GET", "/v1/jobs", query={"status": "dead"}))
    assert [status for status, _ in answers] == [200, 200, 200]

    refused = [
        call_api("GET", "/v1/stats", query={"window_seconds": 70}),
        call_api("GET", "/v1/jobs", query={"type": "echo"}),
    ]
    for status, body in refused:
        assert (status, body["error"]) == (429, "rate_limited")
        assert "read rate limit" in body["message"] and body["retry_after_seconds"] >= 1
    assert call_api("GET", "/v1/stats", query={"window_seconds": 60})[0] == 200  # read moments ago: no read
    assert call_api("GET", "/v1/jobs")[0] == 200  # unfiltered: reads what it answers
    assert call_api("GET", "/v1/stats", query={"window_seconds": 70}, tenant="other")[0] == 200  # its own meter


def test_the_openapi_documents_the_new_routes(call_api):
    _status, schema = call_api("GET", "/v1/openapi.json")
    for path in ("/v1/jobs", "/v1/jobs/{job_id}/cancel", "/v1/jobs/{job_id}/retry", "/v1/jobs:retry", "/v1/stats"):
        assert path in schema["paths"], path
    assert "409" in schema["paths"]["/v1/jobs/{job_id}/cancel"]["post"]["responses"]


def test_times_outside_the_index_range_list_nothing_instead_of_failing(call_api):
    # Found by the API fuzzer: a time before 1970 made the index query's range invalid (a 503).
    for query in ({"until": "0847-11-12T14:41:03+06:30"}, {"since": "9999-01-01T00:00:00Z"}, {"since": "0001-01-01"}):
        status, body = call_api("GET", "/v1/jobs", query=query)
        assert status == 200, (query, body)
        assert body["jobs"] == []


def test_an_empty_time_range_reads_nothing(aws, monkeypatch):
    # Found by the API fuzzer: POST /v1/jobs:retry with a `since` in the future queried an inverted
    # BETWEEN, which DynamoDB refuses (a 503); moto accepts it, so the index must not be queried at all.
    from shared.jobs import listing

    def refuse(*args, **kwargs):
        raise AssertionError("queried an empty range")

    monkeypatch.setattr(job_index, "query_jobs_index", refuse)
    found = listing.read_index("acme", {}, since=time.time() + 86_400, until=time.time(), before=None, want=10)
    assert (found.items, found.next_before) == ([], None)
