"""API key scopes: every /v1 route has its entry in the one table (functions/api/auth.py), and each
scope opens exactly the routes the table gives it, answering 403 before the body is read otherwise."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from functions.api import auth, body, enqueue_routes, responses
from functions.api.handler import handler
from local.events import FakeLambdaContext, http_api_event
from shared.aws.clients import client
from shared.store import keys
from shared.tenants import api_keys, scopes, tenants
from shared.tenants.scopes import Scope

# A value for each path parameter of the table's routes.
_PARAMETERS = {
    "job_id": "jt_not_one",
    "batch_id": "b_not_one",
    "name": "nightly",
    "secret_id": "ss_not_one",
    "token_id": "tk_" + "a" * 26,
}


def _resolver_routes() -> list[Any]:
    from functions.api.resolver import app

    return app._static_routes + app._dynamic_routes  # the resolver's own routes, in the order it tries them


def _path(route: str) -> str:
    return re.sub(r"<(\w+)>", lambda found: _PARAMETERS[found.group(1)], route)


def _call(method: str, path: str, api_key: str, raw_body: str | None = None) -> tuple[int, dict[str, Any]]:
    event = http_api_event(method, path, api_key=api_key)
    event["body"] = raw_body
    answer = handler(event, FakeLambdaContext())
    return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else {}


def test_Ld_every_tenant_route_of_the_resolver_has_its_entry_and_every_entry_a_route():
    tenant_routes = {
        (route.method, route.path)
        for route in _resolver_routes()
        if not auth.is_public(route.path) and not auth.is_operator_path(route.path)
    }
    assert tenant_routes - set(auth.ROUTE_SCOPES) == set(), "a route without a scope in auth.ROUTE_SCOPES"
    assert set(auth.ROUTE_SCOPES) - tenant_routes == set(), "an entry in auth.ROUTE_SCOPES for no route"


_ENQUEUE_PATHS = ["/v1/jobs", "/v1/jobs:batch", "/v1/jobs/jt_x", "/v1/jobs/jt_x/cancel", "/v1/jobs:retry"]


@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"]),
    path=st.one_of(
        st.sampled_from(_ENQUEUE_PATHS),
        st.builds(lambda tail: "/v1/jobs" + tail, st.text(max_size=12)),
        st.builds(lambda tail: "/v1/jobs/" + tail, st.text(max_size=140)),
    ),
)
def test_Ld_every_request_the_enqueue_path_answers_has_its_entry(method, path):
    if enqueue_routes.route(method, path) is not None:
        assert auth.needed_scope(method, path) is not None


_SEGMENT_CHARACTERS = st.one_of(
    st.sampled_from(list("-._~()'!*:@,;=+&$%<> []{}|^_")),
    st.characters(categories=["L", "N"]),
)


@st.composite
def _routed_requests(draw: st.DrawFn) -> tuple[str, str]:
    route = draw(st.sampled_from([route for route in _resolver_routes() if route.path.startswith("/v1/")]))
    path = re.sub(r"<\w+>", lambda _: draw(st.text(_SEGMENT_CHARACTERS, min_size=1, max_size=20)), route.path)
    return route.method, path


@given(_routed_requests())
def test_Ld_the_table_finds_the_scope_of_the_route_the_resolver_would_run(request):
    method, path = request
    ran = next(route for route in _resolver_routes() if route.method == method and route.rule.match(path))
    if auth.is_public(ran.path):
        return
    assert auth.needed_scope(method, path) == auth.ROUTE_SCOPES[(method, ran.path)]


@pytest.mark.parametrize("scope", list(Scope))
@pytest.mark.parametrize(("method", "route"), list(auth.ROUTE_SCOPES))
def test_Ld_each_scope_opens_its_routes_and_is_refused_the_others_before_the_body_is_read(aws, method, route, scope):
    key = tenants.create_key("acme", scope=scope)
    needed = auth.ROUTE_SCOPES[(method, route)]
    # A body that does not parse: a route that opens answers 400 for it, a refusal never reads it.
    raw_body = "{" if method in body.METHODS_WITH_BODY else None

    status, answer = _call(method, _path(route), key, raw_body)

    if scope is Scope.FULL or scope is needed:
        assert status not in (401, 403), answer
        if raw_body is not None:
            assert (status, answer["error"]) == (400, "malformed_json")
    else:
        assert (status, answer["error"]) == (403, "insufficient_scope"), answer
        opening = [s.value for s in scopes.opening(needed)]
        assert (answer["scope"], answer["needed_scopes"]) == (scope.value, opening)
        shown = route.replace("<", "{").replace(">", "}")
        assert answer["message"] == (
            f"this key's scope is '{scope.value}'; {method} {shown} needs " + " or ".join(f"'{s}'" for s in opening)
        )


def test_Ld_read_keys_see_jobs_but_not_signing_secrets_and_enqueue_keys_add_jobs_but_read_nothing(aws):
    full = tenants.create_key("acme")
    read = tenants.create_key("acme", scope=Scope.READ)
    enqueue = tenants.create_key("acme", scope=Scope.ENQUEUE)
    status, accepted = _call("POST", "/v1/jobs", enqueue, json.dumps({"type": "echo", "payload": {"n": 1}}))
    assert status == 202
    job = f"/v1/jobs/{accepted['id']}"

    assert _call("GET", job, read)[0] == 200
    assert _call("GET", "/v1/jobs", read)[0] == 200
    assert _call("GET", "/v1/stats", read)[0] == 200
    assert _call("GET", "/v1/signing-secrets", full)[0] == 200
    assert _call("GET", "/v1/signing-secrets", read)[0] == 403
    assert _call("POST", "/v1/jobs", read, json.dumps({"type": "echo"}))[0] == 403
    assert _call("POST", f"{job}/cancel", read)[0] == 403
    for path in (job, "/v1/jobs", "/v1/stats", "/v1/batches", "/v1/schedules", "/v1/signing-secrets"):
        assert _call("GET", path, enqueue)[0] == 403, path
    assert _call("POST", "/v1/schedules", enqueue, json.dumps({"name": "n"}))[0] == 403  # outlives revocation


def test_Ld_a_narrower_key_on_a_path_with_no_route_is_answered_404_without_the_resolver(aws):
    read = tenants.create_key("acme", scope=Scope.READ)
    full = tenants.create_key("acme")
    for key in (read, full):
        status, answer = _call("GET", "/v1/no-such-route", key)
        assert (status, answer) == (404, {"error": "not_found", "message": "no route GET /v1/no-such-route"})
    assert _call("PUT", "/v1/no-such-route", read, "{}")[0] == 404


def _call_with_headers(method: str, path: str, api_key: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    answer = handler(http_api_event(method, path, api_key=api_key), FakeLambdaContext())
    headers = {name.lower(): value for name, value in (answer.get("headers") or {}).items()}
    return answer["statusCode"], json.loads(answer["body"]), headers


def test_a_known_path_with_another_method_is_answered_405_naming_the_allowed_ones(aws):
    """Whichever key asks (a full key reaches the resolver, a narrower one is answered before it), a path that
    has routes answers another method with 405 and `Allow`; nothing else is done."""
    read, full = tenants.create_key("acme", scope=Scope.READ), tenants.create_key("acme")
    for key in (read, full):
        status, answer, headers = _call_with_headers("PUT", "/v1/jobs", key)
        assert status == 405
        assert answer == {
            "error": "method_not_allowed",
            "message": "PUT is not allowed on /v1/jobs; allowed: GET, POST",
        }
        assert headers["allow"] == "GET, POST"
        status, answer, headers = _call_with_headers("DELETE", "/v1/jobs/jtanyid", key)
        assert status == 405 and headers["allow"] == "GET"
        assert _call("GET", "/v1/no-such-route", key)[0] == 404


@given(
    entry=st.sampled_from(sorted(auth.ROUTE_SCOPES)), method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"])
)
def test_every_route_table_path_answers_405_exactly_for_the_methods_it_lacks(entry, method):
    route = entry[1]
    path = re.sub(r"<[^>]+>", "x1", route)
    allowed = auth.allowed_methods(path)
    assert entry[0] in allowed
    status, body, headers = responses.no_route(method, path, allowed)
    if method in allowed:
        assert (status, body["error"], headers) == (404, "not_found", {})
    else:
        assert (status, body["error"], headers["Allow"]) == (405, "method_not_allowed", ", ".join(allowed))


def test_Ld_a_key_minted_before_scopes_is_full_and_listed_as_full(aws):
    key = tenants.create_key("acme")
    item_key = keys.item_key(keys.api_key_key(api_keys.digest(key)))
    client("dynamodb").update_item(
        TableName="corral-jobs", Key=item_key, UpdateExpression="REMOVE #s", ExpressionAttributeNames={"#s": "scope"}
    )
    tenants.clear_caches()

    assert tenants.owner_of(key) == tenants.KeyOwner("acme", "full")
    assert [info.scope for info in tenants.list_keys("acme")] == ["full"]
    assert _call("GET", "/v1/signing-secrets", key)[0] == 200


def test_Ld_a_scope_this_code_does_not_know_opens_nothing(aws):
    key = tenants.create_key("acme")
    item_key = keys.item_key(keys.api_key_key(api_keys.digest(key)))
    client("dynamodb").update_item(
        TableName="corral-jobs",
        Key=item_key,
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "scope"},
        ExpressionAttributeValues={":s": {"S": "admin"}},
    )
    tenants.clear_caches()

    for method, route in auth.ROUTE_SCOPES:
        assert _call(method, _path(route), key)[0] == 403, (method, route)


def test_Ld_keys_are_minted_full_unless_asked_and_listed_with_their_scope(aws):
    tenants.create_key("acme", label="deploy")  # as `make up` and local/deploy.py mint them
    tenants.create_key("acme", label="grafana", scope=Scope.READ)
    tenants.create_key("acme", label="web", scope=Scope.ENQUEUE)

    assert [(info.label, info.scope) for info in tenants.list_keys("acme")] == [
        ("deploy", "full"),
        ("grafana", "read"),
        ("web", "enqueue"),
    ]


def test_Ld_the_openapi_document_names_each_operations_scopes_and_declares_the_403(aws):
    status, document = _call("GET", "/v1/openapi.json", "")
    assert status == 200
    for (method, route), needed in auth.ROUTE_SCOPES.items():
        operation = document["paths"][route.replace("<", "{").replace(">", "}")][method.lower()]
        opening = [scope.value for scope in scopes.opening(needed)]
        assert operation["x-corral-scopes"] == opening
        assert operation["description"].endswith("API key scope: " + " or ".join(f"`{s}`" for s in opening) + ".")
        assert "insufficient_scope" in operation["responses"]["403"]["description"]
