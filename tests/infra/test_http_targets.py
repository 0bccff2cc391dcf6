"""What HTTP jobs may call, as deployed: the functions' environment per profile and from CDK context."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from infra import http_targets
from shared import settings
from shared.environment import FunctionEnv


def _environments(template: Template) -> list[dict[str, str]]:
    functions = template.find_resources("AWS::Lambda::Function", {"Properties": {"Layers": Match.any_value()}})
    return [f["Properties"]["Environment"]["Variables"] for f in functions.values()]


def test_the_aws_profile_allows_https_to_public_addresses_only(aws_template: Template):
    for environment in _environments(aws_template):  # the API validates at enqueue, the worker at run time
        assert environment["CORRAL_HTTP_ALLOW_PLAIN"] == "0"
        assert environment["CORRAL_HTTP_ALLOW_LOOPBACK"] == "0"
        assert environment["CORRAL_HTTP_PRIVATE_HOSTS"] == ""
        assert int(environment["CORRAL_HTTP_TIMEOUT_SECONDS"]) < settings.PROFILES["aws"].worker_timeout_seconds


def test_the_local_profile_allows_loopback_and_http_within_its_short_worker_timeout(local_template: Template):
    for environment in _environments(local_template):
        assert (environment["CORRAL_HTTP_ALLOW_PLAIN"], environment["CORRAL_HTTP_ALLOW_LOOPBACK"]) == ("1", "1")
        assert int(environment["CORRAL_HTTP_TIMEOUT_SECONDS"]) < settings.PROFILES["local"].worker_timeout_seconds


def _environment_with(context: dict[str, object]) -> dict[str, str]:
    stack = cdk.Stack(cdk.App(context=context), "probe")
    return FunctionEnv(**http_targets.function_env(stack, settings.PROFILES["aws"])).as_environment()


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
