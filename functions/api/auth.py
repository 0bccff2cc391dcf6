"""Who may call what, checked before anything reads the request body (functions/api/handler.py):
tenant keys open /v1 as far as their scope allows, operator keys open /operator, and the dashboard's
files are public (they hold no data; the page sends the key the user typed with each data call).

`ROUTE_SCOPES` is the one table of what each /v1 route needs; a key's scope opens a route or the
answer is 403 before the route runs (shared/tenants/scopes.py, docs/decisions/api-keys.md). A /v1
request that matches no route of the table is answered 404 for a key that is not `full` (405 when the path
has routes for other methods), so a route added without its entry stays closed to narrower keys
(tests/unit/api/test_key_scopes.py fails on it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from functions.api.responses import error_result, json_result, no_route
from shared.tenants import operators, tenants
from shared.tenants.scopes import Scope, opening, opens
from shared.tenants.tenants import KeyOwner

# No key needed: the API's own description, its reference page (/docs), and the dashboard's static page (its
# data calls need one).
PUBLIC_PATHS = frozenset({"/v1/openapi.json", "/dashboard", "/docs"})
PUBLIC_PREFIXES = ("/dashboard/",)
# A token's capability URL (docs/decisions/durable-jobs.md "Tokens"): the path is the credential, checked by its
# route (a wrong capability answers 404, as an unknown token does); it completes only that one token, once.
CAPABILITY_ROUTE = "/v1/tokens/<token_id>/<capability>:complete"  # as its decorator spells it
CAPABILITY_PATHS = re.compile(r"^/v1/tokens/tk_[a-z2-7]{26}/[a-z2-7]{32}:complete$")

OPERATOR_PREFIX = "/operator/"

UNAUTHORIZED_MESSAGE = "missing or unknown API key; send 'Authorization: Bearer <key>'"
OPERATOR_UNAUTHORIZED_MESSAGE = "missing or unknown operator key; send 'Authorization: Bearer <operator key>'"

# The scope each tenant route needs, by method and path as its decorator spells it (`<name>` is one path
# segment). `read` opens the reads of jobs, batches, schedules and stats; `enqueue` opens adding work;
# everything else (changing existing work, schedules, signing secrets, whose values a read must not
# reveal) needs `full`.
ROUTE_SCOPES: dict[tuple[str, str], Scope] = {
    ("POST", "/v1/jobs"): Scope.ENQUEUE,
    ("POST", "/v1/jobs:batch"): Scope.ENQUEUE,
    ("POST", "/v1/batches"): Scope.ENQUEUE,
    ("GET", "/v1/jobs/<job_id>"): Scope.READ,
    ("GET", "/v1/jobs"): Scope.READ,
    ("GET", "/v1/stats"): Scope.READ,
    ("GET", "/v1/batches"): Scope.READ,
    ("GET", "/v1/batches/<batch_id>"): Scope.READ,
    ("GET", "/v1/batches/<batch_id>/jobs"): Scope.READ,
    ("GET", "/v1/schedules"): Scope.READ,
    ("GET", "/v1/schedules/<name>"): Scope.READ,
    ("GET", "/v1/triggers"): Scope.READ,
    ("GET", "/v1/triggers/<name>"): Scope.READ,
    ("POST", "/v1/jobs/<job_id>/cancel"): Scope.FULL,
    ("POST", "/v1/jobs/<job_id>/retry"): Scope.FULL,
    ("POST", "/v1/jobs:retry"): Scope.FULL,
    ("POST", "/v1/events"): Scope.ENQUEUE,
    ("POST", "/v1/tokens/<token_id>:complete"): Scope.FULL,
    ("POST", "/v1/batches/<batch_id>/cancel"): Scope.FULL,
    ("POST", "/v1/schedules"): Scope.FULL,
    ("PATCH", "/v1/schedules/<name>"): Scope.FULL,
    ("DELETE", "/v1/schedules/<name>"): Scope.FULL,
    ("POST", "/v1/triggers"): Scope.FULL,
    ("DELETE", "/v1/triggers/<name>"): Scope.FULL,
    ("POST", "/v1/schedules/<name>:pause"): Scope.FULL,
    ("POST", "/v1/schedules/<name>:resume"): Scope.FULL,
    ("POST", "/v1/schedules/<name>:trigger"): Scope.FULL,
    ("POST", "/v1/schedules/<name>:backfill"): Scope.FULL,
    ("GET", "/v1/signing-secrets"): Scope.FULL,
    ("POST", "/v1/signing-secrets:rotate"): Scope.FULL,
    ("POST", "/v1/signing-secrets/<secret_id>/expire"): Scope.FULL,
}

_PARAMETER = re.compile(r"<\w+>")


def is_public(path: str) -> bool:
    return (
        path in PUBLIC_PATHS
        or path.startswith(PUBLIC_PREFIXES)
        or path == CAPABILITY_ROUTE
        or CAPABILITY_PATHS.match(path) is not None
    )


def is_operator_path(path: str) -> bool:
    return path.startswith(OPERATOR_PREFIX)


def _bearer(headers: Mapping[str, str] | None) -> str:
    header = next((value for name, value in (headers or {}).items() if name.lower() == "authorization"), "")
    scheme, _, key = header.partition(" ")
    return key.strip() if scheme.lower() == "bearer" else ""


def owner_of(headers: Mapping[str, str] | None) -> KeyOwner | None:
    """The tenant and scope of the key the request carries, or None (no key, another scheme, unknown key)."""
    key = _bearer(headers)
    return tenants.owner_of(key) if key else None


def is_operator(headers: Mapping[str, str] | None) -> bool:
    """Whether the request carries an operator key (never a tenant key: the two kinds open different paths)."""
    return operators.is_operator(_bearer(headers))


class _Entry(NamedTuple):
    method: str
    route: str
    pattern: re.Pattern[str]
    scope: Scope


@functools.cache
def _entries() -> tuple[_Entry, ...]:
    """The table with each route as a regular expression. A parameter matches one path segment: any
    characters but '/', wider than the resolver's, so every path the resolver routes finds its entry."""
    return tuple(
        _Entry(method, route, re.compile("[^/]+".join(re.escape(part) for part in _PARAMETER.split(route))), scope)
        for (method, route), scope in ROUTE_SCOPES.items()
    )


def _matching(method: str, path: str) -> list[_Entry]:
    return [entry for entry in _entries() if entry.method == method and entry.pattern.fullmatch(path)]


def allowed_methods(path: str) -> list[str]:
    """The methods the table has a route for at `path` (none: no such path), for a 405's `Allow`."""
    return sorted({entry.method for entry in _entries() if entry.pattern.fullmatch(path)})


def no_route_result(method: str, path: str) -> dict[str, Any]:
    """The answer to a request no route of the table matches: 405 if the path has other methods' routes, else 404."""
    return json_result(*no_route(method, path, allowed_methods(path)))


def needed_scope(method: str, path: str) -> Scope | None:
    """The scope the route at (method, path) needs; None if no route of the table matches. Were two
    entries to match with different scopes, only `full` would open the path."""
    found = {entry.scope for entry in _matching(method, path)}
    if not found:
        return None
    return found.pop() if len(found) == 1 else Scope.FULL


def refusal(owner: KeyOwner, method: str, path: str) -> dict[str, Any] | None:
    """The answer to a tenant request its key's scope does not open (403, or 404 for no route), else None."""
    if owner.scope == Scope.FULL:
        return None  # every route, and the resolver's own 404 or 405 for a path or method that is none
    needed = needed_scope(method, path)
    if needed is None:
        return no_route_result(method, path)
    if opens(owner.scope, needed):
        return None
    scopes = [scope.value for scope in opening(needed)]
    return error_result(
        403,
        "insufficient_scope",
        f"this key's scope is {owner.scope!r}; {method} {_route_of(method, path)} needs "
        + " or ".join(repr(scope) for scope in scopes),
        scope=owner.scope,
        needed_scopes=scopes,
    )


def _route_of(method: str, path: str) -> str:
    """The route as its decorator spells it, parameters in braces: the message echoes no id of the caller's."""
    return _matching(method, path)[0].route.replace("<", "{").replace(">", "}")
