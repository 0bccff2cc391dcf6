"""What HTTP jobs may call, per stack: the functions' environment for shared/targets/http_policy.py.

CDK context (all optional):
  -c corral:http_allow_plain=true              plain http:// targets too (default: https only; the local
                                               profile always allows http)
  -c corral:http_private_hosts=billing.internal=acme|globex,crm.corp=*
                                               host names that may resolve to private addresses (never
                                               loopback or link-local), each for the tenants named
                                               (`*`: every tenant)
  -c corral:http_private_bodies=crm.corp       of those, the hosts whose response bodies come back to
                                               the tenant (default: status and headers only)
  -c corral:http_ports=8443,9443               ports HTTP jobs may call besides 443 (and 80 with plain
                                               http); any other port is refused (docs/decisions/ssrf.md)
"""

from __future__ import annotations

import json
from typing import Any

from constructs import Construct

from shared.profiles import Profile
from shared.targets.http_policy import extra_port, private_host_entry


def _flag(raw: object) -> bool:
    return str(raw).strip().lower() in ("1", "true", "yes")


def _entries(raw: object) -> list[str]:
    if not raw:
        return []
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.strip().startswith("[") else raw.split(",")
    return [str(entry).strip() for entry in raw if str(entry).strip()]  # type: ignore[union-attr]


def _private_hosts(raw: object) -> list[str]:
    """Each entry as `host=tenant|tenant` (sorted), or the synth fails saying why."""
    found = []
    for text in _entries(raw):
        try:
            entry = private_host_entry(text)
        except ValueError as error:
            raise SystemExit(f"corral:http_private_hosts: {error}") from None
        found.append(f"{entry.host}={'|'.join(sorted(entry.tenants))}")
    return sorted(set(found))


def _private_bodies(raw: object, hosts: list[str]) -> list[str]:
    named = {entry.partition("=")[0] for entry in hosts}
    bodies = sorted({entry.lower().rstrip(".") for entry in _entries(raw)})
    for host in bodies:
        if host not in named:
            raise SystemExit(f"corral:http_private_bodies: {host!r} is not one of corral:http_private_hosts")
    return bodies


def _ports(raw: object) -> list[str]:
    """Each extra port as its number, sorted, or the synth fails saying which is not a port."""
    found = set()
    for text in _entries(str(raw) if isinstance(raw, int) else raw):  # cdk.json may hold one number
        port = extra_port(text)
        if port is None:
            raise SystemExit(f"corral:http_ports: {text!r} is not a port (1-65535)")
        found.add(port)
    return [str(port) for port in sorted(found)]


def function_env(scope: Construct, profile: Profile) -> dict[str, Any]:
    """The HTTP targets' fields of the functions' `FunctionEnv`."""
    allow_plain = profile.plain_http_targets or _flag(scope.node.try_get_context("corral:http_allow_plain"))
    hosts = _private_hosts(scope.node.try_get_context("corral:http_private_hosts"))
    return {
        "http_allow_plain": allow_plain,
        "http_allow_loopback": profile.http_loopback_targets,
        "http_private_hosts": tuple(hosts),
        "http_private_bodies": tuple(_private_bodies(scope.node.try_get_context("corral:http_private_bodies"), hosts)),
        "http_ports": tuple(_ports(scope.node.try_get_context("corral:http_ports"))),
        "http_timeout_seconds": profile.http_timeout_seconds,
    }
