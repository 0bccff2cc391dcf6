"""The SSRF guard: which URLs and resolved addresses an HTTP job may reach, by the aws and local rules."""

import pytest

from shared.targets.http_policy import AWS_RULES, Refused, TargetPolicy, check_url, resolve

LOCAL_RULES = TargetPolicy(allow_plain_http=True, allow_loopback=True)


@pytest.mark.parametrize(
    "url",
    [
        "https://169.254.169.254/latest/meta-data/",  # the instance metadata endpoint
        "https://10.0.0.1/",
        "https://172.16.5.4/",
        "https://192.168.1.1/",
        "https://100.64.0.1/",  # CGNAT
        "https://127.0.0.1/",
        "https://127.1/",  # inet_aton shorthand
        "https://2130706433/",  # 127.0.0.1 as one number
        "https://0x7f.0.0.1/",
        "https://0.0.0.0/",
        "https://224.0.0.1/",  # multicast
        "https://240.0.0.1/",  # reserved
        "https://192.0.2.10/",  # documentation
        "https://[::1]/",
        "https://[::ffff:169.254.169.254]/",  # IPv4-mapped
        "https://[64:ff9b::a00:1]/",  # NAT64 of 10.0.0.1
        "https://[fe80::1]/",
        "https://[fd00::1]/",  # unique local
        "https://[ff02::1]/",
        "https://localhost/",
        "https://api.localhost/",
    ],
)
def test_unsafe_hosts_are_refused_at_enqueue_on_the_aws_rules(url):
    with pytest.raises(Refused) as refused:
        check_url(url, AWS_RULES)
    assert refused.value.field == "url"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://example.com/", "scheme must be https"),
        ("ftp://example.com/", "scheme"),
        ("https:///nohost", "no host"),
        ("https://user:secret@example.com/", "credentials"),
        ("https://example.com:99999/", "not a valid URL"),
        ("https://exa mple.com/", "spaces"),
    ],
)
def test_malformed_or_plain_urls_are_refused_on_the_aws_rules(url, why):
    with pytest.raises(Refused, match=why):
        check_url(url, AWS_RULES)


def test_a_public_url_passes_and_keeps_its_path_and_query():
    target = check_url("https://Example.COM./hooks/a?x=1&y=2", AWS_RULES)

    assert (target.scheme, target.host, target.port, target.path) == ("https", "example.com", 443, "/hooks/a?x=1&y=2")
    assert target.host_header == "example.com"
    assert check_url("https://93.184.216.34:8443", AWS_RULES).host_header == "93.184.216.34:8443"


def test_the_local_rules_allow_loopback_and_http_but_not_private_addresses():
    assert check_url("http://127.0.0.1:8080/x", LOCAL_RULES).port == 8080
    assert check_url("http://localhost:8080/x", LOCAL_RULES).host == "localhost"
    with pytest.raises(Refused):
        check_url("http://10.0.0.1/", LOCAL_RULES)
    with pytest.raises(Refused):
        check_url("http://169.254.169.254/", LOCAL_RULES)


def _resolver(table):
    asked = []

    def resolve_name(host, port):
        asked.append(host)
        return table[host]

    resolve_name.asked = asked
    return resolve_name


def test_a_name_resolving_to_loopback_is_refused_at_run_time_on_the_aws_rules():
    target = check_url("https://internal.example.com/hook", AWS_RULES)  # a name: fine at enqueue

    with pytest.raises(Refused, match=r"127\.0\.0\.1 is a loopback address"):
        resolve(target, AWS_RULES, _resolver({"internal.example.com": ["127.0.0.1"]}))


def test_one_refused_address_among_public_ones_refuses_the_name():
    target = check_url("https://mixed.example.com/", AWS_RULES)

    with pytest.raises(Refused, match=r"10\.0\.0\.1"):
        resolve(target, AWS_RULES, _resolver({"mixed.example.com": ["93.184.216.34", "10.0.0.1"]}))


def test_the_connection_goes_to_the_address_that_was_checked():
    target = check_url("https://public.example.com/", AWS_RULES)
    resolver = _resolver({"public.example.com": ["93.184.216.34", "2606:2800:220:1::1"]})

    assert resolve(target, AWS_RULES, resolver) == "93.184.216.34"
    assert resolver.asked == ["public.example.com"]  # resolved once


def test_an_allowlisted_private_host_may_resolve_privately_but_never_to_metadata_or_loopback():
    policy = TargetPolicy(private_hosts=frozenset({"billing.internal"}))
    target = check_url("https://billing.internal/charge", policy)

    assert resolve(target, policy, _resolver({"billing.internal": ["10.1.2.3"]})) == "10.1.2.3"
    for address in ("169.254.169.254", "127.0.0.1"):
        with pytest.raises(Refused):
            resolve(target, policy, _resolver({"billing.internal": [address]}))
    other = check_url("https://other.internal/", policy)
    with pytest.raises(Refused):
        resolve(other, policy, _resolver({"other.internal": ["10.1.2.3"]}))
