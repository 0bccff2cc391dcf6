"""The benchmark's arithmetic: percentiles, utilisation, the timeline, the capacity model."""

import json
from types import SimpleNamespace

import pytest

from bench.lib import faults, measure, report, slo
from bench.lib.load import Sample
from bench.lib.measure import Batch
from bench.lib.timeline import midnight_herd
from bench.models import capacity
from bench.scenarios import fence, run


def _never(context):
    raise NotImplementedError("not wired")


def test_nearest_rank_percentile():
    values = list(range(1, 101))

    assert slo.percentile(values, 99) == 99
    assert slo.percentile(values, 50) == 50
    assert slo.percentile([], 99) is None


def test_utilisation_is_busy_time_over_concurrency_times_window():
    batches = [Batch("env-a", 100.0, 1000, 10), Batch("env-a", 101.0, 1000, 10), Batch("env-b", 100.0, 500, 3)]

    use = slo.utilisation(batches, capacity=2, window=(100.0, 102.0))

    assert use.overall_pct == pytest.approx(100 * 2.5 / 4)
    assert use.per_worker_pct == {"env-a": 100.0, "env-b": 25.0}
    assert use.peak_second_pct == pytest.approx(75.0)


def test_busy_time_outside_the_window_does_not_count():
    use = slo.utilisation([Batch("env", 99.0, 2000, 1)], capacity=1, window=(100.0, 101.0))

    assert use.overall_pct == pytest.approx(100.0)


def test_the_herd_timeline_triples_the_rate_and_places_its_events_inside_the_herd():
    scenario = midnight_herd(quick=True, herd=_never, kill=_never, blip=_never)
    herd_start, herd_end = scenario.window("herd")

    assert scenario.phase_at(herd_start + 0.1).rate_factor == 3 * scenario.phase_at(0).rate_factor
    assert all(herd_start <= event.at < herd_end for event in scenario.events)
    assert scenario.phase_at(scenario.load_seconds) is None


def test_capacity_sees_the_standard_esm_ramp_back_up_a_burst_and_a_prewarmed_one_not():
    plan = capacity.plan(capacity.Inputs())

    assert plan["esm_standard"]["peak_backlog"] > 0
    assert plan["esm_provisioned_prewarmed"]["peak_backlog"] == 0
    assert plan["worker_concurrency"]["burst"] > plan["worker_concurrency"]["steady"]
    assert any("Scheduler" in change for change in plan["design_changes"])


def test_bulk_enqueue_lowers_the_cost_per_million_jobs():
    single = capacity.cost_per_million_jobs(capacity.Inputs())["total"]
    bulk = capacity.cost_per_million_jobs(capacity.Inputs(bulk_fraction=1.0))["total"]

    assert bulk < single


def test_a_store_blip_that_blocks_claims_backs_up_the_burst_and_starting_without_a_claim_does_not():
    faults = capacity.Faults(kill_at=10, blip_at=12)
    inputs = capacity.Inputs(min_pollers_concurrency=240, blip_blocks_starts=True)
    rate = capacity.ESM_STANDARD_ADD_PER_SECOND * capacity.PROVISIONED_SCALING_SPEEDUP
    quiet = capacity.simulate(inputs, add_per_second=rate)
    blocked = capacity.simulate(inputs, add_per_second=rate, faults=faults)
    unclaimed = capacity.simulate(capacity.Inputs(min_pollers_concurrency=240), add_per_second=rate, faults=faults)

    assert blocked.peak_backlog == inputs.burst_rps * inputs.blip_seconds
    assert blocked.p99_wait_ms > 260 >= quiet.p99_wait_ms
    assert unclaimed.p99_wait_ms == quiet.p99_wait_ms
    assert blocked.max_wait_ms == unclaimed.max_wait_ms == 1000 * inputs.killed_batch_returns_s


def test_a_slow_job_is_blamed_on_the_first_window_its_wait_overlapped():
    windows = [slo.Window("kill", 10, 13), slo.Window("blip", 12, 17), slo.Window("herd", 5, 20)]

    assert slo.cause_of_wait(9.0, 9.1, 100, windows) == "on time"
    assert slo.cause_of_wait(9.0, 11.0, 2000, windows) == "kill"
    assert slo.cause_of_wait(14.0, 17.5, 3500, windows) == "blip"
    assert slo.cause_of_wait(18.0, 18.5, 500, windows) == "herd"
    assert slo.cause_of_wait(30.0, 30.5, 500, windows) == "unexplained"


def test_a_job_of_the_killed_batch_is_the_kills_whatever_else_its_wait_overlapped():
    windows = [slo.Window("crons", 12, 13), slo.Window("kill", 10, 13), slo.Window("herd", 5, 20)]

    assert slo.cause_of_wait(12.0, 13.0, 1000, windows) == "crons"  # the cron second's burst, first attempt
    assert slo.cause_of_wait(12.0, 27.0, 15000, windows, attempts=2) == "kill"  # its attempt died with the worker
    assert slo.cause_of_wait(14.0, 15.0, 1000, windows, attempts=2) == "herd"  # retried, but not in the kill


def test_the_plot_colours_each_slow_job_by_its_cause(tmp_path):
    samples = [
        Sample(at=t / 10, latency_ms=20, status=202 if t % 7 else 0, job_id=None, phase="steady") for t in range(50)
    ]
    points = [report.Point(1.0, 50, "on time"), report.Point(2.0, 3000, "kill"), report.Point(3.0, 900, "unexplained")]
    windows = [slo.Window("kill", 2.0, 5.0), slo.Window("herd", 1.0, 4.0)]
    markers = [report.Marker(2.0, "kill", "SIGKILLed", True)]

    report.plot(tmp_path / "slo.png", samples, points, [], markers, windows, [("herd", 1.0, 4.0)], "test")

    assert (tmp_path / "slo.png").stat().st_size > 10_000


def test_fault_windows_are_blamed_blip_first_then_the_cron_second_the_kill_and_the_herd():
    scenario = midnight_herd(quick=True, herd=_never, kill=_never, blip=_never)
    markers = [report.Marker(22.5, "blip", "", True), report.Marker(20.0, "kill", "", True)]
    context = SimpleNamespace(cron_herd={"due_epoch": 1_000_027.0})

    windows = run._windows(context, scenario, {"markers": markers, "started_epoch": 1_000_000.0})

    assert [w.cause for w in windows] == ["blip", "crons", "kill", "herd"]
    assert windows[0] == slo.Window("blip", 22.5, 22.5 + faults.BLIP_SECONDS)
    assert windows[1].start == 27.0


def test_failed_enqueues_are_counted_by_what_the_client_saw():
    failed = [Sample(0, 10_000, 0, None, "herd"), Sample(1, 50, 503, None, "herd"), Sample(2, 40, 0, None, "herd")]

    assert run._by_status(failed) == {"5xx": 1, "no answer": 2}


def test_a_cron_waits_from_its_due_second_not_from_its_firing():
    due = 1_000_000.0
    rows = {
        "cron": measure.JobRow("cron", "succeeded", 1, enqueued_at=due + 8.0, started_at=due + 8.1, finished_at=None),
        "api": measure.JobRow("api", "succeeded", 1, enqueued_at=due + 1.0, started_at=due + 1.1, finished_at=None),
    }

    assert slo.firing_lateness_ms(rows, ["cron", "missing"], due) == [8000.0]
    waits = slo.enqueue_to_run_ms(["cron", "api"], slo.waiting_from_due(rows, ["cron", "missing"], due))
    assert [round(w) for w in waits] == [8100, 100]
    assert rows["cron"].enqueued_at == due + 8.0, "the measured rows are left as they were"


def test_the_blip_is_blamed_until_the_queue_is_back_to_its_depth_before_it():
    depth = [measure.DepthSample(at / 2, 2, 3) for at in range(0, 40)]  # 5 messages until t = 20
    depth += [measure.DepthSample(20 + at / 2, 10, 80) for at in range(0, 20)]  # a backlog until t = 30
    depth += [measure.DepthSample(30 + at / 2, 1, 4) for at in range(0, 10)]

    assert slo.backlog_end(depth, start=20.0, end=25.0) == 30.0
    assert slo.backlog_end(depth, start=5.0, end=6.0) == 6.0, "no backlog: the window is the fault's own"
    assert slo.backlog_end([], start=20.0, end=25.0) == 25.0
    stuck = depth[:50]
    assert slo.backlog_end(stuck, start=20.0, end=22.0) == stuck[-1].at, "never drained: to the last sample"


def test_the_herds_crons_are_created_before_the_load_and_due_cron_lead_seconds_into_the_herd(monkeypatch):
    created = {}

    def create(context, due):
        created["due"] = due.timestamp()
        context.cron_herd = {"expected": 80, "due_epoch": due.timestamp(), "created": "ahead"}

    monkeypatch.setattr(faults, "create_crons_ahead", create)
    monkeypatch.setattr(run.time, "sleep", lambda seconds: created.setdefault("slept", seconds))
    context = SimpleNamespace(cron_herd=None)
    scenario = midnight_herd(quick=True, herd=faults.herd_crons, kill=_never, blip=_never)

    run._crons_ahead(context, scenario)
    load_starts = run.time.time() + created["slept"]  # the sleep was skipped: the load starts after it

    assert created["due"] - load_starts == pytest.approx(scenario.start_of("herd") + faults.CRON_LEAD_SECONDS, abs=1.5)
    assert faults.herd_crons(context).startswith("80 schedules (created before the load) due at")


def test_the_benchmark_needs_neither_the_test_suite_nor_pytest():
    """Every scenario starts its stack with local/platform.py and builds its events with local/events.py:
    importing them all loads no test code, and no bench module imports any, even inside a function."""
    import ast
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    modules = [
        ".".join(path.relative_to(root).with_suffix("").parts)
        for folder in ("scenarios", "lib")
        for path in sorted((root / "bench" / folder).glob("*.py"))
        if path.stem != "__init__"
    ]
    assert "bench.scenarios.run" in modules and "bench.lib.measure" in modules
    check = f"import sys, {', '.join([*modules, 'bench.compare.run'])}; "
    check += "print(sorted(m for m in sys.modules if m == 'pytest' or m.startswith('tests')))"
    out = subprocess.run([sys.executable, "-c", check], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"

    imported = {
        f"{path.relative_to(root)}: {node.module}"
        for path in (root / "bench").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("tests", "pytest")
    }
    assert imported == set()


def _fence_round(kind, seconds, ids=(), cpu=None, calls=None):
    return fence.Round(kind, seconds, tuple(ids), 0, cpu or {}, calls or {})


def _row(job_id, enqueued, started, finished, status="succeeded"):
    return measure.JobRow(job_id, status, 1, enqueued, started, finished)


def test_fence_takes_the_idle_rounds_background_off_each_kinds_cpu_per_job():
    rounds = [
        _fence_round(fence.IDLE, 10.0, cpu={"emulator": 1.0, "worker environments": 0.0}),
        _fence_round(fence.IN_PROCESS, 5.0, ["a", "b"], cpu={"emulator": 0.7, "worker environments": 0.1}),
        _fence_round(fence.IDLE, 10.0, cpu={"emulator": 1.0, "worker environments": 0.2}),
        _fence_round(fence.IN_PROCESS, 5.0, ["c", "d"], cpu={"emulator": 0.9, "worker environments": 0.3}),
    ]
    background = fence.idle_rate(rounds)

    figures = fence.summarise(fence.IN_PROCESS, rounds, {}, {}, background)

    assert background == pytest.approx({"emulator": 0.1, "worker environments": 0.01})
    # 1.6 s of emulator over 10 s of rounds, 1.0 of it background: 0.6 s over 4 jobs.
    assert figures.cpu_ms_per_job == pytest.approx({"emulator": 150.0, "worker environments": 75.0})
    assert figures.cpu_ms_per_job_total == pytest.approx(225.0)
    assert figures.cpu_ms_per_job_gross == pytest.approx(500.0)
    assert (figures.rounds, figures.jobs) == (2, 4)


def test_fence_times_each_job_from_its_record_and_counts_the_ones_that_did_not_succeed():
    rounds = [
        _fence_round(fence.SEPARATE, 3.0, ["a", "b", "c"], calls={"dynamodb.UpdateItem": 6, "sqs.SendMessage": 3})
    ]
    rows = {"a": _row("a", 100.0, 100.02, 100.05), "b": _row("b", 100.0, 100.04, 100.1, status="dead")}

    figures = fence.summarise(fence.SEPARATE, rounds, rows, {"a": 1, "b": 2, "z": 5}, {})

    assert figures.enqueue_to_run_p50_ms == pytest.approx(20.0)
    assert figures.enqueue_to_run_p99_ms == pytest.approx(40.0)
    assert figures.run_to_finish_p99_ms == pytest.approx(60.0)
    assert figures.not_succeeded == 2  # b is dead, c has no record
    assert figures.store_and_queue_calls_per_job == 3.0
    assert figures.lambda_invokes_per_job == 1.0  # a's one and b's two over three jobs; z is not this kind's


def test_fence_adds_the_invokes_to_the_store_and_queue_calls_a_separate_function_costs():
    rows = {"a": _row("a", 0.0, 0.01, 0.02), "b": _row("b", 0.0, 0.01, 0.06)}
    in_process = fence.summarise(
        fence.IN_PROCESS, [_fence_round(fence.IN_PROCESS, 1.0, ["a"], {"emulator": 0.01}, {"x": 3})], rows, {}, {}
    )
    separate = fence.summarise(
        fence.SEPARATE, [_fence_round(fence.SEPARATE, 1.0, ["b"], {"emulator": 0.03}, {"x": 3})], rows, {"b": 1}, {}
    )

    compared = fence.compare(in_process, separate)

    assert compared["ratio"]["run_to_finish_p50_ms"] == 5.0
    assert compared["extra"]["run_to_finish_p50_ms"] == pytest.approx(40.0)
    assert compared["ratio"]["cpu_ms_per_job_total"] == 3.0
    assert compared["extra"]["aws_calls_per_job"] == 1.0


def test_fence_rotates_the_kinds_after_each_idle_round_and_counts_invokes_by_job():
    orders = [fence.cycle_order(cycle) for cycle in range(3)]

    assert orders[0] == (fence.IDLE, fence.IN_PROCESS, fence.SEPARATE, fence.KEPT_CLIENT)
    assert {order[0] for order in orders} == {fence.IDLE}
    assert [{order[place] for order in orders} for place in (1, 2, 3)] == [set(fence.KINDS)] * 3
    lines = [{"fence_invoke": "a"}, {"fence_invoke": "a"}, {"fence_invoke": "b"}, {"message": "other"}]
    assert fence.invokes_by_job(lines) == {"a": 2, "b": 1}


def test_fence_counts_a_process_started_during_the_round_from_zero_and_forgets_one_gone():
    before = {1: 10.0, 2: 5.0}
    after = {1: 10.5, 3: 0.25}

    assert measure.group_cpu(before, after, {"emulator": [1], "worker environments": [2, 3]}) == {
        "emulator": 0.5,
        "worker environments": 0.25,
    }
    assert fence.used({"sqs.SendMessage": 2.0}, {"sqs.SendMessage": 5.0, "dynamodb.GetItem": 1.0}) == {
        "sqs.SendMessage": 3.0,
        "dynamodb.GetItem": 1.0,
    }


# --- make compare (bench/compare/) ---


def test_a_load_given_as_phases_follows_them_and_ends_after_the_last():
    from bench.lib.load import rate_of_phases

    rate_at = rate_of_phases([("steady", 10, 5.0), ("herd", 5, 15.0)])

    assert rate_at(0) == ("steady", 5.0)
    assert rate_at(9.99) == ("steady", 5.0)
    assert rate_at(10) == ("herd", 15.0)
    assert rate_at(15) is None


def _sample(job_id, phase, latency=10.0, status=202):
    return Sample(0.0, latency, status, job_id if status == 202 else None, phase)


def test_a_systems_figures_count_lost_repeated_and_slow_jobs_over_every_job_attempted():
    from bench.compare import figures

    samples = [_sample("a", "steady", 10), _sample("b", "steady", 20), _sample("c", "herd", 40)]
    samples += [_sample(None, "herd", status=0)]  # an enqueue that got no answer
    rows = {
        "a": _row("a", 100.0, 100.01, 100.02),
        "b": _row("b", 100.0, 100.05, 100.06),
        "c": _row("c", 100.0, 102.0, 102.1),
        "cron-1": _row("cron-1", 100.0, 100.1, 100.2),
        "cron-2": _row("cron-2", 100.0, 100.1, None, status="dead"),
    }
    timeline = figures.Timeline(
        samples, rows, ["cron-1", "cron-2"], crons_expected=3, runs={"c": 2}, outcome_writes={"b": 2, "a": 1}
    )

    found = figures.system_figures(timeline, {"emulator": 0.4, "workers": 0.4}, {"jobs_per_s": 50.0}, 3.0)

    assert found["executed_pct"] == round(100 * 4 / 7, 2), "4 succeeded of 4 enqueues + 3 crons due"
    assert found["lost"] == 2, "a cron recorded dead and one that never fired"
    assert (found["ran_twice"], found["recorded_twice"]) == (1, 1)
    assert found["enqueue_to_run_p99_ms_steady"] == pytest.approx(50.0)
    assert found["enqueue_to_run_p99_ms"] == pytest.approx(2000.0)
    assert found["herd_ratio"] == 2.0, "p99 during (40 ms) over before (20 ms); the failed send is not a latency"
    assert found["cpu_ms_per_job"] == 200.0, "0.8 CPU-seconds over 4 jobs that succeeded"
    assert found["cpu_ms_per_job_by_group"] == {"emulator": 100.0, "workers": 100.0}
    assert (found["drain_jobs_per_s"], found["max_rate_at_slo"]) == (50.0, 3.0)


def test_the_idle_background_comes_off_the_shared_processes_only_and_never_below_zero():
    from bench.compare import figures

    net = figures.net_cpu({"emulator": 1.0, "proxy": 0.01, "workers": 0.5}, {"emulator": 0.02, "proxy": 0.01}, 10.0)

    assert net == pytest.approx({"emulator": 0.8, "proxy": 0.0, "workers": 0.5})


def test_a_drain_is_jobs_from_the_first_start_to_the_last_finish_and_per_cpu_second():
    from bench.compare import figures

    rows = {"a": _row("a", 0.0, 10.0, 10.5), "b": _row("b", 0.0, 10.2, 12.0), "c": _row("c", 0.0, 11.0, None, "dead")}

    requests = {"dynamodb.UpdateItem": 4, "dynamodb.PutItem": 1}
    drain = figures.drain_figures(rows, ["a", "b", "c", "missing"], cpu_seconds=0.5, store_requests=requests)

    assert drain == {
        "jobs": 2,
        "seconds": 2.0,
        "jobs_per_s": 1.0,
        "cpu_ms_per_job": 250.0,
        "jobs_per_cpu_second": 4.0,
        "store_requests_per_job": 2.5,
        "store_requests_per_job_by_operation": {"dynamodb.PutItem": 0.5, "dynamodb.UpdateItem": 2.0},
    }


def test_ratios_are_corral_over_each_other_system_and_the_targets_say_which_hold():
    from bench.compare import figures

    def system(cpu, rate, p99, steady, per_cpu, lost=0, twice=0, worker=None):
        return {
            "cpu_ms_per_job": cpu,
            "cpu_ms_per_job_by_group": {} if worker is None else {"worker environments": worker},
            "max_rate_at_slo": rate,
            "enqueue_to_run_p99_ms": p99,
            "enqueue_to_run_p99_ms_steady": steady,
            "drain_jobs_per_cpu_second": per_cpu,
            "lost": lost,
            "recorded_twice": twice,
        }

    systems = {
        "corral": system(30.0, 8.0, 200.0, 50.0, 100.0, worker=6.0),
        "bare": system(15.0, 10.0, 400.0, 20.0, 300.0, worker=3.0),
        "celery": system(20.0, None, 400.0, 100.0, 150.0, lost=7),
    }

    found = figures.ratios(systems)
    met = figures.targets(found, systems)

    assert found["cpu_per_job_corral_over_bare"] == 2.0
    assert found["max_rate_corral_over_bare"] == 0.8
    assert found["max_rate_corral_over_celery"] is None, "not measured is no ratio"
    assert found["worker_cpu_per_job_corral_over_bare"] == 2.0
    assert "worker_cpu_per_job_corral_over_celery" not in found, "Celery's workers are not Lambda environments"
    assert found["p99_steady_corral_over_bare"] == 2.5
    assert found["p99_corral_over_celery"] == 0.5
    assert [name for name, target in met.items() if target["met"]] == [
        "max_rate_corral_over_bare",
        "p99_corral_over_celery",
        "corral_loses_nothing_records_nothing_twice",
    ]
    assert "cpu_per_job_corral_over_bare" in figures.table({}, found)


def test_a_summary_of_several_runs_gives_each_figure_per_run_and_counts_the_runs_that_met_each_target(tmp_path):
    from bench.compare import summary

    def run(started, cpu_ratio, corral_cpu):
        systems = {
            "corral": {"lost": 0, "cpu_ms_per_job": corral_cpu, "cpu_ms_per_job_by_group": {"emulator": 6.0}},
            "bare": {"lost": 0, "cpu_ms_per_job": 10.0, "cpu_ms_per_job_by_group": {"emulator": 4.0}},
        }
        ratios = {"cpu_per_job_corral_over_bare": cpu_ratio, "p99_corral_over_bare": 0.1}
        return {"systems": systems, "ratios": ratios, "run": {"command": "make compare", "started_utc": started}}

    for name, document in {"a": run("T1", 1.4, 14.0), "b": run("T2", 1.7, 17.0)}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "compare.json").write_text(json.dumps(document))

    assert summary.main([str(tmp_path / "a"), str(tmp_path / "b" / "compare.json")]) == 0
    text = summary.summary([summary.load(tmp_path / "a"), summary.load(tmp_path / "b")])

    assert "2 runs of make compare, started T1, T2" in text
    assert "| CPU ms per job (timeline) | 14.0 / 17.0 | 10.0 / 10.0 |" in text
    assert "| cpu_per_job_corral_over_bare | 1.40 / 1.70 | <= 1.5 | 1 of 2 |" in text
    assert "| p99_corral_over_bare | 0.10 / 0.10 | | |" in text, "a ratio without a target is shown, not judged"
    assert "| corral | emulator | 6.00 / 6.00 |" in text
    assert summary.main([str(tmp_path / "missing")]) == 2


def test_the_fault_proxy_counts_the_accepted_outcome_writes_of_one_tables_items():
    from local.fault_proxy import _describe, successful_writes
    from local.proxy_base import Request

    def request(operation, body):
        headers = {"X-Amz-Target": f"DynamoDB_20120810.{operation}"}
        return Request("POST", "/", headers, json.dumps(body).encode())

    put = {"TableName": "bare-jobs", "Item": {"pk": {"S": "job#a"}, "status": {"S": "succeeded"}}}
    celery = {"TableName": "celery-compare", "Item": {"id": {"S": "celery-task-meta-x"}, "result": {"B": "e30="}}}
    update = {
        "TableName": "bare-jobs",
        "Key": {"pk": {"S": "job#a"}},
        "UpdateExpression": "SET #status = :s",
        "ExpressionAttributeValues": {":s": {"S": "dead"}},
    }
    log = [
        _describe(request("PutItem", put), "PutItem", 200, False),
        _describe(request("PutItem", put), "PutItem", 200, False),
        _describe(request("PutItem", put), "PutItem", 400, True),  # a blip's: not written
        _describe(request("UpdateItem", update), "UpdateItem", 200, False),
        _describe(request("GetItem", {"TableName": "bare-jobs", "Key": {"pk": {"S": "job#a"}}}), "GetItem", 200, False),
        _describe(request("PutItem", celery), "PutItem", 200, False),
    ]

    assert sorted(successful_writes(log, "bare-jobs"), key=lambda w: w["operation"]) == [
        {"pk": "job#a", "operation": "PutItem", "sets_status": "succeeded", "count": 2},
        {"pk": "job#a", "operation": "UpdateItem", "sets_status": "dead", "count": 1},
    ]
    assert successful_writes(log, "celery-compare") == [
        {"pk": "celery-task-meta-x", "operation": "PutItem", "sets_status": None, "count": 1}
    ]


def test_each_systems_runs_and_outcome_writes_are_counted_per_job():
    from bench.compare import systems

    writes = [
        {"pk": "job#a", "operation": "UpdateItem", "sets_status": "running", "count": 2},
        {"pk": "job#a", "operation": "UpdateItem", "sets_status": "succeeded", "count": 1},
        {"pk": "job#b", "operation": "PutItem", "sets_status": "succeeded", "count": 2},
    ]
    lines = ["[..: WARNING/ForkPoolWorker-1] ran 1a-2b", "ran 1a-2b", "ran c3", "other line"]

    assert systems.writes_by_item(writes, lambda w: w["sets_status"] in systems.FINAL) == {"job#a": 1, "job#b": 2}
    assert systems.runs_in_log_lines(lines) == {"1a-2b": 2, "c3": 1}
    assert systems.celery_task_id("b'celery-task-meta-1a-2b'") == "1a-2b"
    assert systems.celery_task_id("celery-task-meta-1a-2b") == "1a-2b"


def test_a_celery_result_reads_as_a_job_row():
    from bench.compare import systems

    meta = {
        "status": "SUCCESS",
        "result": {"payload": {"n": 1}, "enqueued_at": 10.0, "started_at": 10.5, "schedule": "herd1-00001"},
        "date_done": "1970-01-01T00:00:11+00:00",
        "task_id": "t-1",
    }
    item = {"id": {"S": "b'celery-task-meta-t-1'"}, "result": {"B": json.dumps(meta).encode()}}

    row = systems.celery_row(item)

    assert row == measure.JobRow("t-1", "succeeded", 1, 10.0, 10.5, 11.0, "herd1-00001")
    failed = {**meta, "status": "FAILURE", "result": {"exc_type": "WorkerLostError"}}
    assert systems.celery_row({**item, "result": {"B": json.dumps(failed).encode()}}).status == "dead"


def test_the_scenarios_find_the_repository_from_their_folder():
    """Where `make bench` writes bench-results/ and reads cdk.out/, and where the cost scenario starts its child."""
    from bench.scenarios import cost

    assert (run.ROOT / "cdk.json").exists() and cost.ROOT == run.ROOT


def test_the_queue_ceiling_counts_what_the_queue_took(aws):
    """Bulk's same-run ceiling: SendMessageBatch calls of 10 straight to a queue, counted by SQS's answers."""
    import boto3

    from bench.lib.bulk import queue_ceiling

    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="ceiling-under-test")["QueueUrl"]
    result = queue_ceiling(sqs, url, seconds=0.3, clients=2)
    depth = int(
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
            "ApproximateNumberOfMessages"
        ]
    )
    assert result.errors == 0 and result.rejected == 0
    assert result.accepted == depth == 10 * result.requests > 0
    assert result.jobs_per_second == pytest.approx(result.accepted / result.seconds)


def test_a_failed_ceiling_call_is_an_error_not_a_crash(aws):
    import boto3

    from bench.lib.bulk import queue_ceiling

    missing = "https://sqs.us-east-1.amazonaws.com/123456789012/no-such-queue"
    result = queue_ceiling(boto3.client("sqs"), missing, seconds=0.1, clients=1)
    assert result.accepted == 0 and result.errors == result.requests > 0


def test_the_profile_marks_each_invocations_first_claim_and_first_run_once():
    from bench.compare.profile import MARKED, StepTimers

    claim, run_step = list(MARKED)
    timers = StepTimers()
    timers.active = True
    claim_call, run_call = timers._timed(claim, lambda: None), timers._timed(run_step, lambda: None)
    for _ in range(2):  # two invocations, each claiming and running twice
        timers.begin_invocation()
        claim_call(), claim_call(), run_call(), run_call()
        timers.end_invocation()
    claim_call()  # outside an invocation: not marked
    assert [len(timers.to_first[claim]), len(timers.to_first[run_step])] == [2, 2]
    assert all(seconds >= 0 for marks in timers.to_first.values() for seconds in marks)
