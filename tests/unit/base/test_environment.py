"""The functions' environment: one typed value, written by infra and read back by the functions."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from shared import environment
from shared.environment import FunctionEnv

ROOT = Path(__file__).resolve().parents[3]


def _everything_set() -> FunctionEnv:
    return FunctionEnv(
        stage="prod",
        table="t",
        queue_url="https://sqs/q",
        dlq_url="https://sqs/d",
        queue_arn="arn:q",
        backstop_url="https://sqs/b",
        backstop_arn="arn:b",
        schedule_group="g",
        scheduler_role_arn="arn:r",
        scheduler_sets_message_group=True,
        dax_endpoint="dax://x",
        status_cache_endpoint="http://127.0.0.1:1",
        lease_seconds=42,
        hand_back_unit_seconds=0.5,
        hand_back_max_seconds=35.0,
        receive_budget=12,
        wait_resend_at=8,
        job_timeout_ceiling=7,
        api_key_cache_seconds=3.0,
        http_allow_plain=True,
        http_allow_loopback=True,
        http_private_hosts=("billing.internal", "crm.corp"),
        http_timeout_seconds=12.5,
        jobs_package="jobs,chaos_jobs",
        jobs_function="corral-jobcode",
        lambda_targets=("reports-*=acme|globex", "arn:aws:lambda:eu-west-1:123456789012:function:etl=*"),
    )


def test_what_infra_writes_a_function_reads_back_field_for_field():
    written = _everything_set()
    assert FunctionEnv.from_environment(written.as_environment()) == written
    assert FunctionEnv.from_environment({}) == FunctionEnv()


def test_each_field_travels_in_its_own_corral_variable():
    names = _everything_set().as_environment()
    assert sorted(names) == sorted(environment.variable(spec.name) for spec in fields(FunctionEnv))
    assert all(re.fullmatch(r"CORRAL_[A-Z0-9_]+", name) for name in names)
    assert _everything_set().as_environment()["CORRAL_HTTP_PRIVATE_HOSTS"] == "billing.internal,crm.corp"


def test_a_stage_names_the_table_and_schedule_group_it_is_not_given():
    """The CLI pointed at a staged deployment (its stage in the environment) finds that stage's resources."""
    staged = FunctionEnv.from_environment({environment.variable("stage"): "prod"})
    assert (staged.table, staged.schedule_group) == ("corral-prod-jobs", "corral-prod")
    assert (staged.names.queue, staged.names.worker_function) == ("corral-prod-jobs", "corral-prod-worker")
    unstaged = FunctionEnv.from_environment({})
    assert (unstaged.table, unstaged.schedule_group, unstaged.names.worker_function) == (
        "corral-jobs",
        "corral",
        "corral-worker",
    )


def test_unset_cache_endpoints_are_left_out():
    written = FunctionEnv().as_environment()
    assert environment.variable("dax_endpoint") not in written
    assert environment.variable("status_cache_endpoint") not in written


def test_current_is_read_once_and_use_replaces_it(monkeypatch):
    environment.use(None)
    monkeypatch.setenv(environment.variable("table"), "first")
    assert environment.current().table == "first"
    monkeypatch.setenv(environment.variable("table"), "second")
    assert environment.current().table == "first"  # a function's environment does not change while it runs
    assert environment.change(table="third").table == environment.current().table == "third"


def test_no_product_code_spells_a_function_variable_but_this_module():
    spelled = sorted(
        str(path.relative_to(ROOT))
        for folder in ("shared", "functions", "infra")
        for path in (ROOT / folder).rglob("*.py")
        if re.search(r"[\"']CORRAL_[A-Z0-9_]+[\"']", path.read_text())
    )
    assert spelled == []
