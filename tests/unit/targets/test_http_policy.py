"""The SSRF guard: which URLs and resolved addresses an HTTP job may reach, by the aws and local rules."""

import json
import logging
import time

import pytest

from shared.targets.http_policy import AWS_RULES, TargetPolicy, TargetRefused, check_url, resolve

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
    with pytest.raises(TargetRefused) as refused:
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
    with pytest.raises(TargetRefused, match=why):
        check_url(url, AWS_RULES)


def test_a_public_url_passes_and_keeps_its_path_and_query():
    target = check_url("https://Example.COM./hooks/a?x=1&y=2", AWS_RULES)

    assert (target.scheme, target.host, target.port, target.path) == ("https", "example.com", 443, "/hooks/a?x=1&y=2")
    assert target.host_header == "example.com"
    with_8443 = TargetPolicy(extra_ports=frozenset({8443}))  # an operator's corral:http_ports=8443
    assert check_url("https://93.184.216.34:8443", with_8443).host_header == "93.184.216.34:8443"


def test_the_local_rules_allow_loopback_and_http_but_not_private_addresses():
    assert check_url("http://127.0.0.1:8080/x", LOCAL_RULES).port == 8080
    assert check_url("http://localhost:8080/x", LOCAL_RULES).host == "localhost"
    with pytest.raises(TargetRefused):
        check_url("http://10.0.0.1/", LOCAL_RULES)
    with pytest.raises(TargetRefused):
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

    with pytest.raises(TargetRefused, match=r"127\.0\.0\.1 is a loopback address"):
        resolve(target, AWS_RULES, _resolver({"internal.example.com": ["127.0.0.1"]}))


def test_one_refused_address_among_public_ones_refuses_the_name():
    target = check_url("https://mixed.example.com/", AWS_RULES)

    with pytest.raises(TargetRefused, match=r"10\.0\.0\.1"):
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
        with pytest.raises(TargetRefused):
            resolve(target, policy, _resolver({"billing.internal": [address]}))
    other = check_url("https://other.internal/", policy)
    with pytest.raises(TargetRefused):
        resolve(other, policy, _resolver({"other.internal": ["10.1.2.3"]}))


# Ports (L-f): the platform's egress addresses call web ports only -------------------------------------


@pytest.mark.parametrize(
    "url", ["https://smtp.example.com:25/", "https://db.example.com:5432/", "https://x.example:22"]
)
def test_Lf_a_port_other_than_443_is_refused_at_enqueue(url):
    with pytest.raises(TargetRefused, match="is not one HTTP jobs may call: 443") as refused:
        check_url(url, AWS_RULES)
    assert refused.value.field == "url"


def test_Lf_port_80_only_where_the_stack_calls_plain_http_and_extra_ports_only_where_the_operator_lists_them():
    assert check_url("https://example.com:443/", AWS_RULES).port == 443
    with pytest.raises(TargetRefused, match="port 80 "):
        check_url("https://example.com:80/", AWS_RULES)
    assert check_url("http://example.com:80/", TargetPolicy(allow_plain_http=True)).port == 80
    with pytest.raises(TargetRefused, match="port 8443 "):
        check_url("https://example.com:8443/", AWS_RULES)
    assert check_url("https://example.com:8443/", TargetPolicy(extra_ports=frozenset({8443, 9443}))).port == 8443
    with pytest.raises(TargetRefused, match="port 0 "):
        check_url("https://example.com:0/", TargetPolicy(extra_ports=frozenset({8443})))


def test_Lf_a_loopback_host_may_name_any_port_where_loopback_is_allowed_and_nowhere_else():
    assert check_url("http://127.0.0.1:54321/x", LOCAL_RULES).port == 54321  # the local profile's test servers
    assert check_url("http://[::1]:54321/x", LOCAL_RULES).port == 54321
    with pytest.raises(TargetRefused, match="port 54321"):
        check_url("http://hooks.example.com:54321/x", LOCAL_RULES)  # a name: it may resolve anywhere
    with pytest.raises(TargetRefused, match="loopback"):
        check_url("https://127.0.0.1:54321/x", AWS_RULES)


def test_Lf_the_api_answers_422_naming_payload_url_and_sends_nothing(aws):
    from functions.api.handler import handler
    from local.events import FakeLambdaContext, http_api_event
    from shared.tenants import tenants

    key = tenants.create_key("acme")
    job = {"type": "http", "payload": {"url": "https://smtp.example.com:25/"}}

    response = handler(http_api_event("POST", "/v1/jobs", job, key), FakeLambdaContext())

    assert response["statusCode"] == 422
    assert json.loads(response["body"])["fields"][0]["field"] == "payload.url"
    assert "Messages" not in aws["sqs"].receive_message(QueueUrl=aws["queue_url"], WaitTimeSeconds=0)


def test_Lf_a_job_accepted_before_the_list_changed_is_dead_and_not_contacted(aws):
    from shared import environment
    from shared.jobs.enqueue import check_job
    from shared.jobs.job_types import JobContext, JobDead
    from shared.model.spec import JobSpec
    from shared.targets import http as http_jobs
    from tests.receiver import receiver

    with receiver() as server:
        payload = {"url": f"http://hooks.customer.test:{server.port}/hook"}
        environment.change(http_allow_plain=True, http_allow_loopback=True, http_ports=(str(server.port),))
        check_job(JobSpec("http", payload, 1), tenant="acme")  # accepted at enqueue

        environment.change(http_ports=())  # the operator redeployed without that port
        context = JobContext("jt-1", 1, 1, time.time() + 5, logging.LoggerAdapter(logging.getLogger("t")), "acme")
        with pytest.raises(JobDead, match=r"port \d+ is not one HTTP jobs may call.*not contacted"):
            http_jobs.call(payload, context, TargetPolicy.from_env("acme"), lambda host, port: ["127.0.0.1"])

        assert server.total() == 0
