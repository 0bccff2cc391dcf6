"""Which URLs an HTTP job may call: the guard against server-side request forgery (SSRF).

A customer's URL is the platform's request, sent from inside its network. So a job may
reach only public addresses: loopback, private (RFC 1918, CGNAT 100.64/10, IPv6 ULA),
link-local (169.254/16 holds the instance metadata endpoint), multicast, reserved,
unspecified and documentation ranges, and the IPv6 forms that embed such an IPv4 address,
are refused. The host is resolved once, every address it resolves to is checked, and the
connection goes to the checked address (shared/targets/http.py), so a name cannot pass the
check and then resolve elsewhere (DNS rebinding).

Stack-level exceptions (set from the profile and CDK context, shared/settings.py):
plain `http` (`https` only by default), loopback (the local profile, so tests reach a
server on 127.0.0.1), and named hosts an operator permits to resolve to private addresses.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

from shared import environment, settings
from shared.errors import CorralError
from shared.targets import grants

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host, port -> the addresses it resolves to (socket.getaddrinfo in production; injected in tests).
Resolver = Callable[[str, int], Sequence[str]]

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LOCALHOST_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


class Refused(CorralError, ValueError):
    """The target may not be contacted; `field` names the payload field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class TargetPolicy:
    allow_plain_http: bool = False
    allow_loopback: bool = False
    # Host names (lower case) that may resolve to private addresses, for this tenant: an operator's
    # internal services, each granted to the tenants named at deploy.
    private_hosts: frozenset[str] = field(default_factory=frozenset)
    # Of those, the ones whose response bodies may come back to the tenant (else only status and headers).
    private_bodies: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_env(cls, tenant: str | None = None) -> TargetPolicy:
        """The stack's policy for `tenant`'s jobs (no tenant: no internal host is reachable)."""
        found = environment.current()
        granted = {entry.host for entry in private_host_entries(found.http_private_hosts) if entry.allows(tenant)}
        return cls(
            allow_plain_http=found.http_allow_plain,
            allow_loopback=found.http_allow_loopback,
            private_hosts=frozenset(granted),
            private_bodies=frozenset(_host_name(host) for host in found.http_private_bodies) & frozenset(granted),
        )

    def withholds_body(self, host: str) -> bool:
        """Whether a response from `host` comes back without its body (an internal host not opened for it)."""
        return host in self.private_hosts and host not in self.private_bodies


@dataclass(frozen=True)
class PrivateHost:
    """An internal host HTTP jobs may reach, and the tenants whose jobs may (`*`: every tenant)."""

    host: str
    tenants: frozenset[str]

    def allows(self, tenant: str | None) -> bool:
        return grants.allows(self.tenants, tenant)


def _host_name(text: str) -> str:
    return text.strip().lower().rstrip(".")


def private_host_entry(text: str) -> PrivateHost:
    """`host=acme|globex` or `host=*`; ValueError, saying what is wrong, without a valid tenant part."""
    host, tenant_part = grants.split(text)
    host = _host_name(host)
    if not host or any(character in host for character in ",/:=|*"):
        raise ValueError(f"{text.strip()!r}: {host!r} is not a host name")
    try:
        tenants = grants.tenants(host, tenant_part, for_what="it is for")
    except ValueError as error:
        raise ValueError(f"{text.strip()!r}: {error}") from None
    return PrivateHost(host, tenants)


def private_host_entries(entries: tuple[str, ...]) -> list[PrivateHost]:
    """The stack's entries; one the functions cannot read grants nothing (infra refuses it at synth)."""
    found = []
    for text in entries:
        try:
            found.append(private_host_entry(text))
        except ValueError:
            continue
    return found


AWS_RULES = TargetPolicy()  # what the aws profile enforces unless the operator relaxes it


# The port a URL of each allowed scheme means when it names none.
DEFAULT_PORTS = {"https": 443, "http": 80}


@dataclass(frozen=True)
class Target:
    """A URL that passed the enqueue-time checks."""

    scheme: str
    host: str  # lower case, no brackets, no trailing dot
    port: int
    path: str  # path and query, as sent on the request line

    @property
    def host_header(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return shown if self.port == DEFAULT_PORTS[self.scheme] else f"{shown}:{self.port}"

    @property
    def origin(self) -> str:
        """scheme://host[:port], the default port left out: what a per-destination signing secret names."""
        return f"{self.scheme}://{self.host_header}"


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:  # the forms inet_aton accepts and a resolver turns into an address: 127.1, 0x7f.0.0.1, 2130706433
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped:
        return address.ipv4_mapped
    if address.sixtofour:
        return address.sixtofour
    if address.teredo:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def why_refused(address: IPAddress, policy: TargetPolicy, *, private_allowed: bool = False) -> str | None:
    """The reason this address may not be contacted, or None if it may."""
    if isinstance(address, ipaddress.IPv6Address) and (embedded := _embedded_ipv4(address)) is not None:
        reason = why_refused(embedded, policy, private_allowed=private_allowed)
        return f"{reason} (embedded in {address})" if reason else None
    if address.is_loopback:
        return None if policy.allow_loopback else f"{address} is a loopback address"
    if address.is_unspecified:
        return f"{address} is the unspecified address"
    if address.is_link_local:
        return f"{address} is link-local (the instance metadata endpoint lives there)"
    if address.is_multicast:
        return f"{address} is a multicast address"
    if address.is_reserved:
        return f"{address} is a reserved address"
    private = address.is_private or address in _CGNAT
    if private and private_allowed:
        return None
    if private or not address.is_global:
        return f"{address} is a private or non-public address"
    return None


def check_url(url: str, policy: TargetPolicy) -> Target:
    """Enqueue-time checks: scheme, shape, and the host when the URL alone shows it unsafe."""
    if len(url) > settings.HTTP_URL_MAX_LENGTH:
        raise Refused("url", f"longer than {settings.HTTP_URL_MAX_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise Refused("url", f"not a valid URL: {error}") from error
    schemes = ("https", "http") if policy.allow_plain_http else ("https",)
    if parts.scheme not in schemes:
        raise Refused("url", f"scheme must be {' or '.join(schemes)}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused("url", "has no host")
    if parts.username is not None or parts.password is not None:
        raise Refused("url", "must not carry credentials; send them in headers")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise Refused("url", "must not contain spaces or control characters")
    target = Target(scheme=parts.scheme, host=host, port=port or DEFAULT_PORTS[parts.scheme], path=_request_path(parts))
    literal = _ip_literal(host)
    if literal is not None:
        if (reason := why_refused(literal, policy)) is not None:
            raise Refused("url", f"not a public address: {reason}")
    elif (host in _LOCALHOST_NAMES or host.endswith(".localhost")) and not policy.allow_loopback:
        raise Refused("url", f"{host} is a loopback name")
    return target


def _request_path(parts: SplitResult) -> str:
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def resolve(target: Target, policy: TargetPolicy, resolver: Resolver | None = None) -> str:
    """Run-time check: resolve once; every address must be allowed. Returns the address to connect to."""
    resolver = resolver or system_resolver
    literal = _ip_literal(target.host)
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        try:
            addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in resolver(target.host, target.port)]
        except (OSError, UnicodeError) as error:
            raise ResolutionFailed(f"cannot resolve {target.host}: {error}") from error
        if not addresses:
            raise ResolutionFailed(f"{target.host} resolves to no address")
    private_allowed = target.host in policy.private_hosts
    for address in addresses:
        if (reason := why_refused(address, policy, private_allowed=private_allowed)) is not None:
            raise Refused("url", f"{target.host} resolves to a refused address: {reason}")
    return str(addresses[0])


class ResolutionFailed(CorralError, OSError):
    """DNS did not answer: may be transient, so retried like a connection error."""
