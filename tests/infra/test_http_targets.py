"""What HTTP jobs may call, as deployed: the functions' environment per profile and from CDK context."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from infra import http_targets
from shared import profiles
from shared.environment import FunctionEnv


def _environments(template: Template) -> list[dict[str, str]]:
    functions = template.find_resources("AWS::Lambda::Function", {"Properties": {"Layers": Match.any_value()}})
    return [f["Properties"]["Environment"]["Variables"] for f in functions.values()]


def test_the_aws_profile_allows_https_to_public_addresses_only(aws_template: Template):
    for environment in _environments(aws_template):  # the API validates at enqueue, the worker at run time
        assert environment["CORRAL_HTTP_ALLOW_PLAIN"] == "0"
        assert environment["CORRAL_HTTP_ALLOW_LOOPBACK"] == "0"
        assert environment["CORRAL_HTTP_PRIVATE_HOSTS"] == ""
        assert int(environment["CORRAL_HTTP_TIMEOUT_SECONDS"]) < profiles.PROFILES["aws"].worker_timeout_seconds


def test_the_local_profile_allows_loopback_and_http_within_its_short_worker_timeout(local_template: Template):
    for environment in _environments(local_template):
        assert (environment["CORRAL_HTTP_ALLOW_PLAIN"], environment["CORRAL_HTTP_ALLOW_LOOPBACK"]) == ("1", "1")
        assert int(environment["CORRAL_HTTP_TIMEOUT_SECONDS"]) < profiles.PROFILES["local"].worker_timeout_seconds


def _environment_with(context: dict[str, object]) -> dict[str, str]:
    stack = cdk.Stack(cdk.App(context=context), "probe")
    return FunctionEnv(**http_targets.function_env(stack, profiles.PROFILES["aws"])).as_environment()


def test_an_operator_may_allow_plain_http_and_name_private_hosts():
    environment = _environment_with(
        {"corral:http_allow_plain": "true", "corral:http_private_hosts": "Billing.Internal.=acme, crm.corp=*"}
    )

    assert environment["CORRAL_HTTP_ALLOW_PLAIN"] == "1"
    assert environment["CORRAL_HTTP_ALLOW_LOOPBACK"] == "0"  # never on the aws profile
    assert environment["CORRAL_HTTP_PRIVATE_HOSTS"] == "billing.internal=acme,crm.corp=*"


def test_a_private_host_entry_that_is_not_a_name_fails_the_synth():
    with pytest.raises(SystemExit, match="not a host name"):
        _environment_with({"corral:http_private_hosts": "10.0.0.0/8"})


def test_Lf_an_operator_may_allow_extra_ports_and_the_default_stack_allows_none(aws_template: Template):
    for environment in _environments(aws_template):
        assert environment["CORRAL_HTTP_PORTS"] == ""  # 443 only (80 too where plain http is allowed)

    environment = _environment_with({"corral:http_ports": "9443, 8443,8443"})

    assert environment["CORRAL_HTTP_PORTS"] == "8443,9443"
    assert FunctionEnv.from_environment(environment).http_ports == ("8443", "9443")
    assert _environment_with({"corral:http_ports": 8443})["CORRAL_HTTP_PORTS"] == "8443"  # a number in cdk.json


@pytest.mark.parametrize("ports", ["25,smtp", "0", "65536", "-1", "8443.5"])
def test_Lf_an_extra_port_that_is_not_a_port_fails_the_synth(ports):
    with pytest.raises(SystemExit, match="is not a port"):
        _environment_with({"corral:http_ports": ports})
