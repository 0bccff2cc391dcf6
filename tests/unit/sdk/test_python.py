"""The SDK against stub HTTP servers on 127.0.0.1: retries that never duplicate a job, errors that
carry status, code and field, bulk enqueue in chunks, pagination."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from client import Corral, CorralError, EnqueueOutcome, errors


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any


@dataclass
class Stub:
    """Answers each request with the next scripted reply: (status, body, headers), or "drop" to close
    the connection without answering."""

    replies: list[Any]
    requests: list[Seen] = field(default_factory=list)
    default: Callable[[Seen], Any] | None = None
    url: str = ""


@pytest.fixture
def stub() -> Iterator[Stub]:
    state = Stub(replies=[])

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            seen = Seen(self.command, parts.path, parse_qs(parts.query), json.loads(raw) if raw else None)
            state.requests.append(seen)
            reply = state.replies.pop(0) if state.replies else state.default(seen)
            if reply == "drop":
                self.connection.shutdown(socket.SHUT_RDWR)
                self.connection.close()
                return
            status, body, headers = (*reply, {})[:3]
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = do_PATCH = _answer

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def slept() -> list[float]:
    return []


@pytest.fixture
def corral(stub: Stub, slept: list[float]) -> Corral:
    return Corral(stub.url, "ck_test", timeout=2, sleep=slept.append)


def test_503_then_202_is_one_job_sent_twice_with_the_same_idempotency_key(stub, corral, slept):
    stub.replies = [
        (503, {"error": "unavailable", "message": "queue unavailable"}, {"Retry-After": "1"}),
        (202, {"id": "jk-same", "status": "queued"}),
    ]
    assert corral.enqueue("echo", {"n": 1}) == "jk-same"
    first, second = stub.requests
    assert first.body == second.body
    assert first.body["idempotency_key"].startswith("sdk-")
    assert slept and slept[0] >= 1  # Retry-After honoured


def test_a_dropped_connection_is_retried_with_the_same_key(stub, corral):
    stub.replies = ["drop", (202, {"id": "jk-same", "status": "queued"})]
    assert corral.enqueue("echo", idempotency_key="order-42") == "jk-same"
    assert [seen.body["idempotency_key"] for seen in stub.requests] == ["order-42", "order-42"]


def test_a_dropped_connection_is_not_retried_for_a_request_that_is_unsafe_to_repeat(stub, corral):
    stub.replies = ["drop"]
    with pytest.raises(errors.ConnectionFailed) as raised:
        corral.retry("jt-1")
    assert raised.value.status is None and isinstance(raised.value, CorralError)
    assert len(stub.requests) == 1


def test_a_refused_connection_is_retried_then_reported():
    slept: list[float] = []
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    corral = Corral(f"http://127.0.0.1:{port}", "ck_x", retries=2, sleep=slept.append)
    with pytest.raises(errors.ConnectionFailed, match="no answer"):
        corral.get("jt-1")
    assert len(slept) == 2


def test_429_is_retried_and_retries_run_out_as_a_typed_error(stub, corral, slept):
    stub.default = lambda _seen: (429, {"error": "rate_limited", "message": "slow down"}, {"Retry-After": "0"})
    with pytest.raises(errors.RateLimited) as raised:
        corral.get("jt-1")
    assert (raised.value.status, raised.value.code) == (429, "rate_limited")
    assert len(stub.requests) == 5 and len(slept) == 4


def test_an_enqueue_over_the_rate_limit_waits_the_retry_after_then_succeeds(stub, corral, slept):
    limited = (429, {"error": "rate_limited", "message": "slow down", "retry_after_seconds": 2}, {"Retry-After": "2"})
    stub.replies = [limited, (202, {"id": "jt-1", "status": "queued"})]
    assert corral.enqueue("echo", {}) == "jt-1"
    assert slept and slept[0] >= 2.0


def test_a_retry_after_beyond_the_policy_is_raised_at_once_with_its_wait(stub, corral, slept):
    stub.default = lambda _seen: (429, {"error": "rate_limited", "message": "slow down"}, {"Retry-After": "3600"})
    with pytest.raises(errors.RateLimited) as raised:
        corral.enqueue("echo", {})
    assert raised.value.retry_after == 3600 and len(stub.requests) == 1 and not slept


def test_errors_carry_status_code_and_field_and_are_never_assertion_errors(stub, corral):
    stub.replies = [
        (422, {"error": "invalid_request", "message": "must be 1-25", "field": "max_attempts"}),
        (404, {"error": "not_found", "message": "no such job"}),
        (409, {"error": "conflict", "message": "the job is running"}),
        (401, {"error": "unauthorized", "message": "unknown key"}),
    ]
    with pytest.raises(errors.InvalidRequest) as invalid:
        corral.enqueue("echo", max_attempts=99)
    assert (invalid.value.status, invalid.value.code, invalid.value.field) == (422, "invalid_request", "max_attempts")
    with pytest.raises(errors.NotFound):
        corral.get("jt-1")
    with pytest.raises(errors.Conflict, match="running"):
        corral.cancel("jt-1")
    with pytest.raises(errors.Unauthorized):
        corral.stats()
    assert len(stub.requests) == 4  # none of these is retried
    assert not issubclass(CorralError, AssertionError)


def test_Ld_a_scope_refusal_is_a_permission_denied_naming_the_scopes_and_never_retried(stub, corral):
    stub.replies = [
        (
            403,
            {
                "error": "insufficient_scope",
                "message": "this key's scope is 'read'; POST /v1/jobs needs 'enqueue' or 'full'",
                "scope": "read",
                "needed_scopes": ["enqueue", "full"],
            },
        ),
        (403, {"error": "forbidden", "message": "the request alone is larger than a quota"}),
    ]
    with pytest.raises(errors.PermissionDenied) as denied:
        corral.enqueue("echo")
    assert isinstance(denied.value, errors.Forbidden)
    assert (denied.value.status, denied.value.code, denied.value.scope) == (403, "insufficient_scope", "read")
    assert denied.value.needed_scopes == ("enqueue", "full")
    with pytest.raises(errors.Forbidden) as too_large:
        corral.enqueue("echo")
    assert not isinstance(too_large.value, errors.PermissionDenied)
    assert len(stub.requests) == 2  # neither is retried


def _batch_answer(seen: Seen) -> Any:
    results = []
    for index, job in enumerate(seen.body["jobs"]):
        if job["type"] == "bad":
            results.append(
                {"index": index, "status": "rejected", "error": "invalid_request", "message": "x", "field": "type"}
            )
        else:
            results.append({"index": index, "id": "id-" + job["idempotency_key"], "status": "queued"})
    return 207 if any(r["status"] == "rejected" for r in results) else 202, {"results": results}


def test_enqueue_many_chunks_by_100_and_keeps_order_and_per_item_errors(stub, corral):
    stub.default = _batch_answer
    jobs = [{"type": "bad" if i == 150 else "echo", "payload": i} for i in range(250)]
    progress: list[int] = []
    outcomes = corral.enqueue_many(jobs, on_chunk=progress.append)
    assert [len(seen.body["jobs"]) for seen in stub.requests] == [100, 100, 50]
    assert progress == [100, 100, 50]
    assert [o.index for o in outcomes] == list(range(250))
    assert [seen_job["payload"] for seen in stub.requests for seen_job in seen.body["jobs"]] == list(range(250))
    bad = outcomes[150]
    assert not bad.ok and bad.id is None and bad.error.field == "type"
    assert all(o.ok and o.id.startswith("id-sdk-") for o in outcomes if o.index != 150)


def test_enqueue_many_sends_unavailable_items_again_with_their_keys(stub, corral):
    unavailable = {"index": 1, "status": "rejected", "error": "unavailable", "message": "queue unavailable"}
    stub.replies = [
        (207, {"results": [{"index": 0, "id": "a", "status": "queued"}, unavailable]}),
        (202, {"results": [{"index": 0, "id": "b", "status": "queued"}]}),
    ]
    outcomes = corral.enqueue_many(
        [{"type": "echo", "idempotency_key": "k0"}, {"type": "echo", "idempotency_key": "k1"}]
    )
    assert outcomes == [EnqueueOutcome(0, "a"), EnqueueOutcome(1, "b")]
    assert [job["idempotency_key"] for job in stub.requests[1].body["jobs"]] == ["k1"]


def test_list_follows_the_cursor_across_pages(stub, corral):
    stub.replies = [
        (200, {"jobs": [{"id": "3"}, {"id": "2"}], "next_cursor": "c1", "note": "n"}),
        (200, {"jobs": [{"id": "1"}], "next_cursor": None, "note": "n"}),
    ]
    assert [job["id"] for job in corral.list(status="dead", page_size=2)] == ["3", "2", "1"]
    assert stub.requests[0].query == {"status": ["dead"], "limit": ["2"]}
    assert stub.requests[1].query["cursor"] == ["c1"]


def test_wait_times_out_with_the_last_view(stub, slept):
    stub.default = lambda _seen: (200, {"id": "jt-1", "status": "running"})
    corral = Corral(stub.url, "ck_test", sleep=slept.append)
    with pytest.raises(errors.WaitTimeout) as raised:
        corral.wait("jt-1", timeout=0)
    assert raised.value.job["status"] == "running" and isinstance(raised.value, CorralError)


def test_schedules_round_trip_their_bodies(stub, corral):
    stub.replies = [(201, {"name": "nightly"}), (200, {"schedules": [{"name": "nightly"}]}), (200, {})]
    corral.schedules.create("nightly", "cron(0 2 * * ? *)", "echo", {"a": 1}, timezone="Europe/Paris")
    assert stub.requests[0].body == {
        "name": "nightly",
        "expression": "cron(0 2 * * ? *)",
        "timezone": "Europe/Paris",
        "job": {"type": "echo", "payload": {"a": 1}},
    }
    assert list(corral.schedules.list()) == [{"name": "nightly"}]
    corral.schedules.delete("nightly")
    assert (stub.requests[2].method, stub.requests[2].path) == ("DELETE", "/v1/schedules/nightly")


def test_schedules_list_follows_the_cursor_and_sends_a_timeout(stub, corral):
    stub.replies = [
        (201, {"name": "a"}),
        (200, {"schedules": [{"name": "a"}, {"name": "b"}], "next_cursor": "s1"}),
        (200, {"schedules": [{"name": "c"}], "next_cursor": None}),
    ]
    corral.schedules.create("a", "rate(1 hour)", "echo", timeout_seconds=20)
    assert stub.requests[0].body["job"] == {"type": "echo", "payload": None, "timeout_seconds": 20}

    assert [s["name"] for s in corral.schedules.list(page_size=2)] == ["a", "b", "c"]
    assert stub.requests[1].query == {"limit": ["2"]}
    assert stub.requests[2].query == {"limit": ["2"], "cursor": ["s1"]}


def test_schedule_changes_send_what_the_api_takes(stub, corral):
    stub.default = lambda seen: (
        200,
        {"name": "nightly", "state": "paused" if seen.path.endswith(":pause") else "enabled"},
    )

    corral.schedules.update("nightly", job={"payload": {"day": "today"}}, end=None, overlap="skip")
    assert corral.schedules.pause("nightly", note="incident 42")["state"] == "paused"
    corral.schedules.resume("nightly")

    update, pause, resume = stub.requests
    assert (update.method, update.path) == ("PATCH", "/v1/schedules/nightly")
    assert update.body == {"job": {"payload": {"day": "today"}}, "end": None, "overlap": "skip"}
    assert (pause.path, pause.body) == ("/v1/schedules/nightly:pause", {"note": "incident 42"})
    assert (resume.method, resume.path) == ("POST", "/v1/schedules/nightly:resume")


def test_a_trigger_retried_carries_the_same_idempotency_key_and_reads_either_answer(stub, corral, slept):
    stub.replies = [
        (503, {"error": "unavailable", "message": "queue unavailable"}),
        (202, {"id": "jk-run", "status": "queued"}),
        (200, {"id": "jk-other", "status": "skipped", "reason": "overlap skip: ..."}),
    ]
    assert corral.schedules.trigger("nightly") == {"id": "jk-run", "status": "queued"}
    first, second = stub.requests
    assert first.path == "/v1/schedules/nightly:trigger"
    assert first.body == second.body and first.body["idempotency_key"].startswith("sdk-")

    assert corral.schedules.trigger("nightly", idempotency_key="deploy-17")["status"] == "skipped"
    assert stub.requests[2].body == {"idempotency_key": "deploy-17"}


def test_a_backfill_is_retried_as_it_is_safe_to_repeat(stub, corral, slept):
    runs = [{"id": "js-1", "scheduled_for": "2026-12-01T00:00:00Z"}]
    stub.replies = ["drop", (202, {"runs": runs})]

    assert corral.schedules.backfill("nightly", "2026-12-01T00:00:00Z", "2026-12-01T00:01:00Z") == runs
    first, second = stub.requests
    assert first.path == "/v1/schedules/nightly:backfill"
    assert first.body == second.body == {"start": "2026-12-01T00:00:00Z", "end": "2026-12-01T00:01:00Z"}


def test_a_quota_refusal_is_raised_at_once_not_retried(stub, corral):
    stub.default = lambda _seen: (
        429,
        {"error": "quota_exceeded", "message": "schedule quota reached: 5 of 5 (max_schedules)"},
    )
    with pytest.raises(errors.QuotaExceeded) as raised:
        corral.schedules.create("a", "rate(1 hour)", "echo")
    assert len(stub.requests) == 1
    assert isinstance(raised.value, errors.RateLimited) and "5 of 5" in raised.value.message


def test_a_batch_retried_after_a_503_is_sent_again_with_the_same_idempotency_key(stub, corral):
    stub.replies = [
        (503, {"error": "unavailable", "message": "some jobs were not sent"}),
        (201, {"id": "bsame", "status": "running", "total": 2}),
    ]
    created = corral.batches.create(
        [{"type": "echo"}, {"type": "echo", "payload": 1}], on_complete={"type": "echo"}, description="two"
    )
    assert created == {"id": "bsame", "status": "running", "total": 2}
    first, second = stub.requests
    assert first.path == "/v1/batches" and first.body == second.body
    assert first.body["idempotency_key"].startswith("sdk-")
    assert first.body["on_complete"] == {"type": "echo"} and "on_success" not in first.body


def test_a_batch_is_waited_for_until_no_job_is_pending(stub, corral):
    running = {"id": "b1", "status": "running", "pending": 1, "total": 2}
    done = {"id": "b1", "status": "completed_with_failures", "pending": 0, "total": 2}
    stub.replies = [(200, running), (200, done)]
    assert corral.batches.wait("b1", timeout=5)["status"] == "completed_with_failures"
    assert [seen.path for seen in stub.requests] == ["/v1/batches/b1", "/v1/batches/b1"]


def test_batches_are_listed_across_pages(stub, corral):
    stub.replies = [
        (200, {"batches": [{"id": "b2"}], "next_cursor": "c1"}),
        (200, {"batches": [{"id": "b1"}], "next_cursor": None}),
    ]
    assert [batch["id"] for batch in corral.batches.list(status="running")] == ["b2", "b1"]
    assert stub.requests[1].query == {"status": ["running"], "cursor": ["c1"]}


@pytest.mark.parametrize(
    ("listing", "field"),
    [
        (lambda corral: corral.list, "jobs"),
        (lambda corral: corral.schedules.list, "schedules"),
        (lambda corral: corral.batches.list, "batches"),
    ],
    ids=["jobs", "schedules", "batches"],
)
def test_every_list_is_an_iterator_that_asks_for_a_page_only_when_it_is_wanted(stub, corral, listing, field):
    stub.replies = [
        (200, {field: [{"id": "1"}, {"id": "2"}], "next_cursor": "c1"}),
        (200, {field: [{"id": "3"}], "next_cursor": None}),
    ]

    first_two = listing(corral)(max_items=2)
    assert isinstance(first_two, Iterator) and stub.requests == []  # nothing asked before it is iterated
    assert [item["id"] for item in first_two] == ["1", "2"]
    assert len(stub.requests) == 1  # the second page holds nothing wanted: never asked for

    stub.replies = [(200, {field: [{"id": "1"}], "next_cursor": "c1"}), (200, {field: [{"id": "2"}]})]
    assert [item["id"] for item in listing(corral)()] == ["1", "2"]
    assert stub.requests[-1].query["cursor"] == ["c1"]


def test_a_callback_types_the_fields_the_api_takes_on_a_job_callback_and_no_others():
    from client import Callback
    from docs import generate

    document = generate.served_document()
    schemas = document["components"]["schemas"]

    def schema(field: dict[str, Any]) -> dict[str, Any]:
        """The object schema a field refers to (an optional field: its schema or null)."""
        (ref,) = [option["$ref"] for option in field.get("anyOf", [field]) if "$ref" in option]
        return schemas[ref.rsplit("/", 1)[1]]

    job = schema(document["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"])
    for kind in ("on_success", "on_failure"):
        callback = schema(job["properties"][kind])
        assert callback["additionalProperties"] is False
        assert set(Callback.__optional_keys__) == set(callback["properties"]), kind


def test_the_package_exports_each_public_name_once_from_the_module_that_defines_it():
    import client

    assert len(client.__all__) == len(set(client.__all__))
    assert all(hasattr(client, name) for name in client.__all__)
    assert not hasattr(client, "JobTimeout") and not hasattr(Corral, "job")  # one name per thing: WaitTimeout, get


def test_the_client_module_stays_one_readable_file():
    from pathlib import Path

    import client.corral

    assert len(Path(client.corral.__file__).read_text().splitlines()) <= 450


def test_triggers_round_trip_their_bodies_and_list_across_pages(stub, corral):
    stub.replies = [
        (201, {"name": "receipt"}),
        (200, {"triggers": [{"name": "a"}], "next_cursor": "t1"}),
        (200, {"triggers": [{"name": "b"}], "next_cursor": None}),
        (200, {"name": "a"}),
        (200, {"name": "a", "deleted": True}),
    ]
    corral.triggers.create("receipt", "payment.received", "echo", {"v": 2}, match={"plan": "pro"}, max_attempts=3)
    assert stub.requests[0].body == {
        "name": "receipt",
        "event": "payment.received",
        "match": {"plan": "pro"},
        "job": {"type": "echo", "payload": {"v": 2}, "max_attempts": 3},
    }
    assert [trigger["name"] for trigger in corral.triggers.list(page_size=1)] == ["a", "b"]
    assert stub.requests[2].query == {"limit": ["1"], "cursor": ["t1"]}
    corral.triggers.get("a")
    corral.triggers.delete("a")
    assert [(seen.method, seen.path) for seen in stub.requests[3:]] == [
        ("GET", "/v1/triggers/a"),
        ("DELETE", "/v1/triggers/a"),
    ]
