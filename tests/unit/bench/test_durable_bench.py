"""`make durable`'s arithmetic: its figures from samples (bench/scenarios/durable.py)."""

import pytest

from bench.lib.measure import JobRow
from bench.scenarios import durable, fence


def _row(job_id: str, enqueued: float, started: float, finished: float, status: str = "succeeded") -> JobRow:
    return JobRow(job_id, status, 1, enqueued, started, finished)


def _round(kind: str, seconds: float, units=(), cpu=None, calls=None, answered=None, own=None):
    ids = tuple(job_id for unit in units for job_id in unit)
    measured = fence.Round(kind, seconds, ids, 0, cpu or {}, calls or {})
    return durable.DurableRound(measured, tuple(units), answered or {}, own or {})


def test_requests_are_summed_as_store_writes_store_reads_and_queue_requests():
    calls = {
        "dynamodb.UpdateItem": 20,
        "dynamodb.PutItem": 1,
        "dynamodb.TransactWriteItems": 2,
        "dynamodb.GetItem": 3,
        "dynamodb.Query": 1,
        "sqs.SendMessage": 10,
        "sqs.ChangeMessageVisibilityBatch": 1,
        "other.POST": 4,
    }

    assert durable.request_kinds(calls) == {"store_writes": 23, "store_reads": 4, "queue_requests": 11}


def test_a_durable_ten_counts_per_step_and_the_idle_background_is_taken_off():
    views = {
        "d1": {
            "steps": [
                {"id": f"s{n}", "started_at": 100.0 + n, "finished_at": 100.0 + n + 0.01} for n in range(durable.STEPS)
            ]
        }
    }
    rows = {"d1": _row("d1", 99.5, 99.9, 110.0)}
    rounds = [
        _round(fence.IDLE, 10.0, cpu={"worker": 1.0}, calls={"dynamodb.UpdateItem": 10}),
        _round(durable.DURABLE, 5.0, [("d1",)], {"worker": 1.5}, {"dynamodb.UpdateItem": 25, "sqs.SendMessage": 1}),
    ]

    figures = durable.kind_figures(durable.DURABLE, rounds, rows, views, {"worker": 0.1}, {"dynamodb.UpdateItem": 1.0})

    assert figures["work"] == 10 and figures["jobs"] == 1 and figures["not_succeeded"] == 0
    assert figures["store_writes_per_work"] == 2.0  # (25 - 1/s x 5 s) / 10 steps
    assert figures["queue_requests_per_work"] == 0.1
    assert figures["cpu_ms_per_work"] == {"worker": 100.0}  # (1.5 s - 0.1 x 5 s) / 10
    assert figures["whole_p50_ms"] == pytest.approx(10_500.0)
    assert figures["hop_p50_ms"] == pytest.approx(990.0)


def test_a_chain_counts_per_job_and_its_hop_is_the_callbacks_not_the_benchs():
    chain = ("p0", "c0", "p1", "c1")
    rows = {
        "p0": _row("p0", 0.0, 0.1, 0.2),
        "c0": _row("c0", 0.2, 0.25, 0.3),  # 50 ms after its parent finished
        "p1": _row("p1", 1.3, 1.4, 1.5),  # the bench took a second to enqueue the next link: not a hop
        "c1": _row("c1", 1.5, 1.57, 1.6, status="dead"),
    }

    figures = durable.kind_figures(durable.CHAINED, [_round(durable.CHAINED, 2.0, [chain])], rows, {}, {}, {})

    assert durable.callback_hops_ms(chain, rows) == pytest.approx([50.0, 70.0])
    assert figures["whole_p50_ms"] == pytest.approx(1600.0)
    assert figures["not_succeeded"] == 1


def test_a_unit_with_a_job_not_finished_has_no_end_to_end_time():
    rows = {"a": _row("a", 0.0, 0.1, 0.2), "b": JobRow("b", "running", 1, 0.0, 0.1, None)}

    assert durable.whole_ms(("a", "b"), rows) is None
    assert durable.whole_ms(("a",), rows) == pytest.approx(200.0)


def test_sleep_lateness_is_the_next_steps_start_less_the_sleeps_due_time():
    view = {
        "steps": [
            {"id": "before", "started_at": 10.0, "finished_at": 10.1},
            {"id": "nap", "started_at": 10.2, "finished_at": 12.5},
            {"id": "after", "started_at": 12.45, "finished_at": 12.5},
        ]
    }

    assert durable.sleep_lateness_ms(view, 2) == pytest.approx(250.0)
    assert durable.sleep_lateness_ms({"steps": view["steps"][:2]}, 2) is None  # never resumed


def test_event_latency_is_the_next_steps_start_less_the_202():
    view = {"steps": [{"id": "wait", "started_at": 5.0}, {"id": "after", "started_at": 20.3}]}

    assert durable.event_latency_ms(view, 20.0) == pytest.approx(300.0)
    assert durable.event_latency_ms({}, 20.0) is None


def test_the_waits_latencies_are_gathered_from_their_rounds():
    nap = {"steps": [{"id": "nap", "started_at": 0.0}, {"id": "after", "started_at": 2.1}]}
    waited = {"steps": [{"id": "after", "started_at": 7.4}]}
    rounds = [
        _round(durable.SLEEP, 3.0, [("n1",)]),
        _round(durable.EVENT_WAIT, 3.0, [("e1",)], answered={"e1": 7.0}),
    ]

    waits = durable.wait_latencies(rounds, {"n1": nap, "e1": waited})

    assert waits["sleep_resume_lateness"]["p50_ms"] == pytest.approx(100.0)
    assert waits["event_to_resume"]["p90_ms"] == pytest.approx(400.0)
    assert waits["event_to_resume"]["samples"] == 1
    assert waits["event_to_resume"]["values_ms"] == [400]


def test_ratios_are_of_figures_measured_in_the_same_run_and_none_without_a_base():
    figures = {
        "durable": {"store_writes_per_work": 3.0, "cpu_ms_per_work_total": 50.0, "whole_p50_ms": None},
        "chained": {"store_writes_per_work": 2.0, "cpu_ms_per_work_total": 0.0, "whole_p50_ms": 10.0},
    }

    ratio = durable.ratios(figures, "durable", "chained")

    assert ratio["store_writes_per_work"] == 1.5
    assert ratio["cpu_ms_per_work_total"] is None and ratio["whole_p50_ms"] is None


def test_every_kind_leads_a_cycle_in_turn_after_the_idle_round():
    orders = [fence.cycle_order(cycle, durable.KINDS) for cycle in range(len(durable.KINDS))]

    assert all(order[0] == fence.IDLE for order in orders)
    assert {order[1] for order in orders} == set(durable.KINDS)
