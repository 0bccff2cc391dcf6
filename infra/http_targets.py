"""What HTTP jobs may call, per stack: the functions' environment for shared/targets/http_policy.py.

CDK context (both optional):
  -c corral:http_allow_plain=true              plain http:// targets too (default: https only; the local
                                               profile always allows http)
  -c corral:http_private_hosts=a.internal,b    host names that may resolve to private addresses
                                               (never loopback or link-local)
"""

from __future__ import annotations

import json

from constructs import Construct

from shared.settings import Profile


def _flag(raw: object) -> bool:
    return str(raw).strip().lower() in ("1", "true", "yes")


def _hosts(raw: object) -> list[str]:
    if not raw:
        return []
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.strip().startswith("[") else raw.split(",")
    hosts = [str(host).strip().lower().rstrip(".") for host in raw]  # type: ignore[union-attr]
    for host in hosts:
        if not host or "," in host or "/" in host or ":" in host:
            raise SystemExit(f"corral:http_private_hosts: {host!r} is not a host name")
    return sorted(set(hosts))


def environment(scope: Construct, profile: Profile) -> dict[str, str]:
    allow_plain = profile.plain_http_targets or _flag(scope.node.try_get_context("corral:http_allow_plain"))
    return {
        "CORRAL_HTTP_ALLOW_PLAIN": "1" if allow_plain else "0",
        "CORRAL_HTTP_ALLOW_LOOPBACK": "1" if profile.http_loopback_targets else "0",
        "CORRAL_HTTP_PRIVATE_HOSTS": ",".join(_hosts(scope.node.try_get_context("corral:http_private_hosts"))),
        "CORRAL_HTTP_TIMEOUT_SECONDS": str(profile.http_timeout_seconds),
    }
