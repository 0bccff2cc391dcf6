"""Internal hosts for HTTP jobs are granted per tenant, and their answers' bodies stay internal unless
the operator opens them (corral:http_private_hosts, corral:http_private_bodies)."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from aws_cdk import App, Stack

from infra import http_targets
from shared import environment, profiles
from shared.jobs.job_types import JobContext, JobDead
from shared.targets import http as http_jobs
from shared.targets import signing_secrets
from shared.targets.http_policy import TargetPolicy, private_host_entry
from tests.receiver import Answer, receiver

ACME = JobContext(
    job_id="jt-private-1",
    attempt=1,
    max_attempts=3,
    deadline=float("inf"),
    logger=logging.LoggerAdapter(logging.getLogger("test"), {}),
    tenant="acme",
)
MALLORY = dataclasses.replace(ACME, tenant="mallory")


@pytest.fixture(scope="module")
def server():
    with receiver() as running:
        yield running


@pytest.fixture
def internal_hosts(aws):
    """billing.internal for acme and globex only, crm.corp for every tenant with its bodies opened; the
    test resolves both to the local receiver, which the local profile's loopback rule lets through."""
    signing_secrets._cache.clear()
    environment.change(
        http_allow_plain=True,
        http_allow_loopback=True,
        http_timeout_seconds=2,
        http_private_hosts=("billing.internal=acme|globex", "crm.corp=*"),
        http_private_bodies=("crm.corp",),
    )
    yield
    signing_secrets._cache.clear()


def _to_loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


def _allow_port(port: int) -> None:
    """The test server's ephemeral port, as an operator allows one (corral:http_ports): a name that is not
    loopback itself may call only the allowed ports."""
    environment.change(http_ports=(str(port),))


def http_jobs_resolves_for(tenant: str, host: str, resolver: object) -> str:
    from shared.targets.http_policy import Target, resolve

    return resolve(Target("http", host, 80, "/"), TargetPolicy.from_env(tenant), resolver)  # type: ignore[arg-type]


def test_an_internal_host_is_granted_only_to_its_tenants(internal_hosts):
    assert TargetPolicy.from_env("acme").private_hosts == {"billing.internal", "crm.corp"}
    assert TargetPolicy.from_env("mallory").private_hosts == {"crm.corp"}
    assert TargetPolicy.from_env(None).private_hosts == frozenset()


def test_another_tenants_job_is_dead_before_contacting_an_internal_host(internal_hosts, server):
    _allow_port(server.port)
    path = server.path(Answer(200, b'{"secret": "payroll"}'))
    url = f"http://billing.internal:{server.port}{path}"
    to_private = lambda host, port: ["10.0.0.5"]  # noqa: E731 - where the internal host really lives
    with pytest.raises(JobDead, match="not contacted"):
        http_jobs.call({"url": url, "method": "GET"}, MALLORY, TargetPolicy.from_env("mallory"), to_private)
    assert server.received(path) == []
    assert http_jobs_resolves_for("acme", "billing.internal", to_private) == "10.0.0.5"


def test_an_internal_hosts_answer_comes_back_without_its_body_unless_opened(internal_hosts, server):
    _allow_port(server.port)
    path = server.path(Answer(200, b'{"secret": "payroll"}', {"Content-Type": "application/json"}))
    closed = http_jobs.call(
        {"url": f"http://billing.internal:{server.port}{path}", "method": "GET"},
        ACME,
        TargetPolicy.from_env("acme"),
        _to_loopback,
    )
    assert closed["status"] == 200 and closed["body"] is None and closed["body_withheld"] is True
    assert "payroll" not in repr(closed)

    opened_path = server.path(Answer(200, b'{"contacts": 3}', {"Content-Type": "application/json"}))
    opened = http_jobs.call(
        {"url": f"http://crm.corp:{server.port}{opened_path}", "method": "GET"},
        ACME,
        TargetPolicy.from_env("acme"),
        _to_loopback,
    )
    assert opened["body"] == {"contacts": 3} and "body_withheld" not in opened


def test_an_internal_hosts_error_does_not_carry_its_body(internal_hosts, server):
    _allow_port(server.port)
    path = server.path(Answer(404, b"no such employee: alice, salary 120k"))
    with pytest.raises(JobDead) as dead:
        http_jobs.call(
            {"url": f"http://billing.internal:{server.port}{path}", "method": "GET"},
            ACME,
            TargetPolicy.from_env("acme"),
            _to_loopback,
        )
    assert "salary" not in str(dead.value) and "withheld" in str(dead.value)


@pytest.mark.parametrize(
    ("entry", "why"),
    [("billing.internal", "name the tenants"), ("b.internal=acme|*", "stands alone"), ("10.0.0.0/8=acme", "host name")],
)
def test_an_entry_without_its_tenants_is_refused(entry, why):
    with pytest.raises(ValueError, match=why):
        private_host_entry(entry)


def _function_env(context: dict[str, object]) -> dict[str, object]:
    return http_targets.function_env(Stack(App(context=context), "probe"), profiles.PROFILES["aws"])


def test_the_synth_refuses_an_entry_without_tenants_and_bodies_of_an_unnamed_host():
    with pytest.raises(SystemExit, match="name the tenants"):
        _function_env({"corral:http_private_hosts": "billing.internal"})
    with pytest.raises(SystemExit, match="not a tenant name"):
        _function_env({"corral:http_private_hosts": "billing.internal=Not A Tenant"})
    with pytest.raises(SystemExit, match="not one of corral:http_private_hosts"):
        _function_env({"corral:http_private_hosts": "billing.internal=acme", "corral:http_private_bodies": "crm.corp"})
    found = _function_env(
        {
            "corral:http_private_hosts": "Billing.Internal.=globex|acme,crm.corp=*",
            "corral:http_private_bodies": "crm.corp",
        }
    )
    assert found["http_private_hosts"] == ("billing.internal=acme|globex", "crm.corp=*")
    assert found["http_private_bodies"] == ("crm.corp",)
