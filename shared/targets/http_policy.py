"""Which URLs an HTTP job may call: the guard against server-side request forgery (SSRF).

A customer's URL is the platform's request, sent from inside its network. So a job may
reach only public addresses: loopback, private (RFC 1918, CGNAT 100.64/10, IPv6 ULA),
link-local (169.254/16 holds the instance metadata endpoint), multicast, reserved,
unspecified and documentation ranges, and the IPv6 forms that embed such an IPv4 address,
are refused. The host is resolved once, every address it resolves to is checked, and the
connection goes to the checked address (shared/targets/http.py), so a name cannot pass the
check and then resolve elsewhere (DNS rebinding).

Ports: a job calls port 443 (and 80 where the stack calls plain http), and the extra ports the
operator lists (`corral:http_ports`): the platform's shared egress addresses are not a way to
reach a third party's mail or database ports. A URL whose host is itself loopback may name any
port: only the local profile reaches loopback, and its test servers listen on ephemeral ports.

One parser reads every URL a tenant gives: a job's target (`check_url`) and a signing secret's
destination (`check_origin`), so both refuse the same malformed hosts, naming their own field.

Stack-level exceptions (set from the profile and CDK context, shared/settings.py):
plain `http` (`https` only by default), loopback (the local profile, so tests reach a
server on 127.0.0.1), extra ports, and named hosts an operator permits to resolve to private
addresses.
"""

from __future__ import annotations

import ipaddress
import re
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


class TargetRefused(CorralError, ValueError):
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
    # Ports a URL may name besides its allowed schemes' defaults (443, and 80 with plain http).
    extra_ports: frozenset[int] = field(default_factory=frozenset)

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
            extra_ports=frozenset(port for text in found.http_ports if (port := extra_port(text)) is not None),
        )

    @property
    def schemes(self) -> tuple[str, ...]:
        return ("https", "http") if self.allow_plain_http else ("https",)

    @property
    def ports(self) -> frozenset[int]:
        """The ports a URL may name (a loopback host aside)."""
        return frozenset(DEFAULT_PORTS[scheme] for scheme in self.schemes) | self.extra_ports

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


def extra_port(text: str) -> int | None:
    """A port of `corral:http_ports` (1-65535), or None for anything else (infra refuses it at synth)."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    port = int(text)
    return port if 0 < port < 65536 else None


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


# A DNS name's label: letters, digits, hyphens (not first or last) and underscores, 1 to 63 of them.
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_NAME_MAX_LENGTH = 253
_NUMBER = re.compile(r"[0-9]+|0x[0-9a-f]*")  # a last label a resolver would read as part of an IPv4 address


def check_url(url: str, policy: TargetPolicy, field: str = "url") -> Target:
    """Enqueue-time checks of a job's URL: scheme, shape, port, and the host when the URL alone shows it
    unsafe. TargetRefused names `field`."""
    return _parse(url, policy, field, origin_only=False)


def check_origin(text: str, policy: TargetPolicy, field: str = "destination") -> Target:
    """`check_url` for an origin (`scheme://host[:port]`, no path, query or fragment): the URL a
    destination names, which the requests it signs must be able to reach. TargetRefused names `field`."""
    return _parse(text, policy, field, origin_only=True)


def _parse(url: str, policy: TargetPolicy, field: str, *, origin_only: bool) -> Target:
    """The one parser of a tenant's URLs; TargetRefused naming `field` for anything it would not call."""
    if len(url) > settings.HTTP_URL_MAX_LENGTH:
        raise TargetRefused(field, f"longer than {settings.HTTP_URL_MAX_LENGTH} characters")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise TargetRefused(field, "must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise TargetRefused(field, f"not a valid URL: {error}") from error
    if parts.scheme not in policy.schemes:
        if origin_only:
            shown = " or ".join(f"{scheme}://" for scheme in policy.schemes)
            raise TargetRefused(field, f"must be an {shown} origin, e.g. https://hooks.example.com")
        raise TargetRefused(field, f"scheme must be {' or '.join(policy.schemes)}")
    if "@" in parts.netloc:
        raise TargetRefused(field, "must not carry credentials (user:password@); an HTTP job sends them in headers")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise TargetRefused(field, "has no host")
    if (problem := _host_problem(host)) is not None:
        raise TargetRefused(field, f"{host[:100]!r} is not a host name or IP address: {problem}")
    if origin_only and (parts.path not in ("", "/") or parts.query or parts.fragment or url.endswith(("?", "#"))):
        raise TargetRefused(field, "must be an origin only (scheme://host[:port]): no path, query or fragment")
    literal = _ip_literal(host)
    loopback_host = (literal is not None and literal.is_loopback) or _loopback_name(host)
    if port == 0 or (port is not None and port not in policy.ports and not loopback_host):
        allowed = ", ".join(str(allowed) for allowed in sorted(policy.ports))
        raise TargetRefused(field, f"port {port} is not one HTTP jobs may call: {allowed} (an operator may add more)")
    target = Target(
        scheme=parts.scheme,
        host=host,
        port=port if port is not None else DEFAULT_PORTS[parts.scheme],
        path=_request_path(parts),
    )
    if literal is not None:
        if (reason := why_refused(literal, policy)) is not None:
            raise TargetRefused(field, f"not a public address: {reason}")
    elif _loopback_name(host) and not policy.allow_loopback:
        raise TargetRefused(field, f"{host} is a loopback name")
    return target


def _host_problem(host: str) -> str | None:
    """Why `host` (lower case, no trailing dot) is neither a DNS name nor an IP address, or None."""
    if ":" in host:  # inside [...]: only an IPv6 address, without a zone (a zone names this machine's interface)
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return "not an IPv6 address"
        return "an IPv6 zone is not allowed" if "%" in host else None
    if not host.isascii():
        return "write an internationalised name in its IDNA form (xn--...)"
    if len(host) > _NAME_MAX_LENGTH:
        return f"longer than {_NAME_MAX_LENGTH} characters"
    labels = host.split(".")
    for label in labels:
        if not label:
            return "an empty label"
        if not _LABEL.fullmatch(label):
            return f"the label {label[:64]!r} (letters, digits, '-' and '_', 1 to 63 of them)"
    if _NUMBER.fullmatch(labels[-1]) and _ip_literal(host) is None:  # as a browser's URL parser reads it
        return "it ends in a number, and is no IPv4 address"
    return None


def _loopback_name(host: str) -> bool:
    return host in _LOCALHOST_NAMES or host.endswith(".localhost")


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
            raise TargetRefused("url", f"{target.host} resolves to a refused address: {reason}")
    return str(addresses[0])


class ResolutionFailed(CorralError, OSError):
    """DNS did not answer: may be transient, so retried like a connection error."""
