"""What HTTP jobs may call, per stack: the functions' environment for shared/targets/http_policy.py.

CDK context (both optional):
  -c corral:http_allow_plain=true              plain http:// targets too (default: https only; the local
                                               profile always allows http)
  -c corral:http_private_hosts=a.internal,b    host names that may resolve to private addresses
                                               (never loopback or link-local)
"""

from __future__ import annotations

import json
from typing import Any

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


def function_env(scope: Construct, profile: Profile) -> dict[str, Any]:
    """The HTTP targets' fields of the functions' `FunctionEnv`."""
    allow_plain = profile.plain_http_targets or _flag(scope.node.try_get_context("corral:http_allow_plain"))
    return {
        "http_allow_plain": allow_plain,
        "http_allow_loopback": profile.http_loopback_targets,
        "http_private_hosts": tuple(_hosts(scope.node.try_get_context("corral:http_private_hosts"))),
        "http_timeout_seconds": profile.http_timeout_seconds,
    }
