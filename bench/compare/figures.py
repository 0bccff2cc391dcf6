"""From what one system's timeline and drain left to the figures of compare.json, and the ratios between
systems (pure: tests/unit/bench/test_bench.py). Definitions: docs/benchmark.md "corral beside the limit and a peer".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.lib import slo
from bench.lib.load import Sample
from bench.lib.measure import JobRow
from bench.lib.report import format_value

# The lean path's targets (ratios of the same run; docs/decisions/the-limit-and-a-peer.md), each: (comparison, bound).
TARGETS = {
    "cpu_per_job_corral_over_bare": ("<=", 1.5),
    "worker_cpu_per_job_corral_over_bare": ("<=", 1.5),
    "max_rate_corral_over_bare": (">=", 0.8),
    "p99_steady_corral_over_bare": ("<=", 2.0),
    "drain_per_cpu_second_corral_over_celery": (">=", 1.2),
    "p99_corral_over_celery": ("<", 1.0),
}
WORKER_GROUP = "worker environments"  # the process group of a system's worker functions (systems.py)


@dataclass(frozen=True)
class Timeline:
    """What one system's run of the timeline left: the load's samples, its job records (crons' waits
    from their due second), the crons' ids, and each job's runs and accepted outcome writes."""

    samples: list[Sample]
    rows: Mapping[str, JobRow]
    cron_ids: list[str]
    crons_expected: int
    runs: Mapping[str, int]
    outcome_writes: Mapping[str, int]


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return round(numerator / denominator, 2) if numerator is not None and denominator else None


def net_cpu(gross: Mapping[str, float], idle_per_second: Mapping[str, float], seconds: float) -> dict[str, float]:
    """CPU seconds by process group, less what the shared processes (emulator, sidecars, this process)
    spend idle over the same `seconds`, never below 0: what the system's work cost."""
    return {name: max(0.0, value - idle_per_second.get(name, 0.0) * seconds) for name, value in gross.items()}


def drain_figures(
    rows: Mapping[str, JobRow], ids: Iterable[str], cpu_seconds: float, store_requests: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """A backlog's drain: jobs per second from the first start to the last finish, and per CPU-second;
    `store_requests` (DynamoDB requests that reached the store during the drain, by operation), per job."""
    done = [row for job_id in ids if (row := rows.get(job_id)) and row.status == "succeeded"]
    starts = [row.started_at for row in done if row.started_at is not None]
    finishes = [row.finished_at for row in done if row.finished_at is not None]
    requests = store_requests or {}
    seconds = max(finishes) - min(starts) if starts and finishes else 0.0
    return {
        "jobs": len(done),
        "seconds": round(seconds, 2),
        "jobs_per_s": _round(len(done) / seconds) if seconds > 0 else None,
        "cpu_ms_per_job": _round(cpu_seconds * 1000 / len(done), 2) if done else None,
        "jobs_per_cpu_second": _round(len(done) / cpu_seconds) if cpu_seconds > 0 else None,
        "store_requests_per_job": _round(sum(requests.values()) / len(done), 2) if requests and done else None,
        "store_requests_per_job_by_operation": (
            {operation: round(count / len(done), 2) for operation, count in sorted(requests.items())} if done else {}
        ),
    }


def system_figures(
    timeline: Timeline,
    cpu_seconds: Mapping[str, float],
    drain: Mapping[str, Any],
    max_rate_at_slo: float | None,
) -> dict[str, Any]:
    """One system's figures. `cpu_seconds`: the timeline's CPU by process group, net of the idle
    background (`net_cpu`), from the load's start to the end of its drain."""
    samples = timeline.samples
    accepted = list(dict.fromkeys(s.job_id for s in samples if s.job_id))
    jobs = accepted + [job_id for job_id in timeline.cron_ids if job_id not in set(accepted)]
    done = slo.executed(jobs, dict(timeline.rows))
    attempted = len(samples) + timeline.crons_expected
    waits = slo.enqueue_to_run_ms(jobs, dict(timeline.rows))
    steady = [s.job_id for s in samples if s.job_id and s.phase == "steady"]
    steady_waits = slo.enqueue_to_run_ms(steady, dict(timeline.rows))
    latencies = [s.latency_ms for s in samples if s.status == 202]
    before = slo.percentile(slo.phase_latencies(samples, "steady"), 99)
    during = slo.percentile(slo.phase_latencies(samples, "herd"), 99)
    total_cpu = sum(cpu_seconds.values())
    per_job = done.succeeded or 1
    return {
        "executed_pct": round(100 * done.succeeded / max(1, attempted), 2),
        # accepted (or due, for a cron) and never recorded as succeeded: dead, failed, or nowhere
        "lost": len(accepted) + timeline.crons_expected - done.succeeded,
        "ran_twice": sum(1 for job_id in jobs if timeline.runs.get(job_id, 0) > 1),
        "recorded_twice": sum(1 for job_id in jobs if timeline.outcome_writes.get(job_id, 0) > 1),
        "enqueue_p50_ms": _round(slo.percentile(latencies, 50)),
        "enqueue_p99_ms": _round(slo.percentile(latencies, 99)),
        "enqueue_to_run_p50_ms": _round(slo.percentile(waits, 50)),
        "enqueue_to_run_p99_ms": _round(slo.percentile(waits, 99)),
        "enqueue_to_run_p99_ms_steady": _round(slo.percentile(steady_waits, 99)),
        "api_p99_before_herd_ms": _round(before),
        "api_p99_during_herd_ms": _round(during),
        "herd_ratio": _ratio(during, before),
        "drain_jobs_per_s": drain.get("jobs_per_s"),
        "drain_jobs_per_cpu_second": drain.get("jobs_per_cpu_second"),
        "store_requests_per_job": drain.get("store_requests_per_job"),
        "cpu_ms_per_job": round(total_cpu * 1000 / per_job, 2),
        "cpu_ms_per_job_by_group": {name: round(value * 1000 / per_job, 2) for name, value in cpu_seconds.items()},
        "max_rate_at_slo": max_rate_at_slo,
        "jobs": {
            "attempted": attempted,
            "accepted": len(accepted),
            "crons_due": timeline.crons_expected,
            "crons_fired": len(timeline.cron_ids),
            "succeeded": done.succeeded,
            "dead": done.dead,
            "unfinished": done.unfinished,
            "failed_enqueues": sum(1 for s in samples if s.status != 202),
        },
        "drain": dict(drain),
    }


def ratios(systems: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    """corral over each other system: CPU per job, max rate at the SLO, enqueue-to-run p99 (whole
    timeline and its fault-free `steady` phase), and drain per CPU-second."""
    corral = systems.get("corral", {})
    found: dict[str, float | None] = {}
    for other_name, other in systems.items():
        if other_name == "corral":
            continue
        found[f"cpu_per_job_corral_over_{other_name}"] = _ratio(corral.get("cpu_ms_per_job"), other["cpu_ms_per_job"])
        if WORKER_GROUP in other.get("cpu_ms_per_job_by_group", {}):  # Celery's workers are no Lambda environments
            found[f"worker_cpu_per_job_corral_over_{other_name}"] = _ratio(
                corral.get("cpu_ms_per_job_by_group", {}).get(WORKER_GROUP),
                other["cpu_ms_per_job_by_group"][WORKER_GROUP],
            )
        found[f"max_rate_corral_over_{other_name}"] = _ratio(corral.get("max_rate_at_slo"), other["max_rate_at_slo"])
        found[f"p99_corral_over_{other_name}"] = _ratio(
            corral.get("enqueue_to_run_p99_ms"), other["enqueue_to_run_p99_ms"]
        )
        found[f"p99_steady_corral_over_{other_name}"] = _ratio(
            corral.get("enqueue_to_run_p99_ms_steady"), other["enqueue_to_run_p99_ms_steady"]
        )
        found[f"drain_per_cpu_second_corral_over_{other_name}"] = _ratio(
            corral.get("drain_jobs_per_cpu_second"), other["drain_jobs_per_cpu_second"]
        )
    return found


def meets(value: float | None, target: tuple[str, float]) -> bool | None:
    """Whether a ratio meets a target of TARGETS (comparison, bound); None when it was not measured."""
    if value is None:
        return None
    op, bound = target
    return {"<=": value <= bound, ">=": value >= bound, "<": value < bound}[op]


def targets(found_ratios: Mapping[str, float | None], systems: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Each target of the issue: its value and whether it is met (None: not measured)."""
    met: dict[str, Any] = {}
    for name, (op, bound) in TARGETS.items():
        value = found_ratios.get(name)
        met[name] = {"value": value, "target": f"{op} {bound:g}", "met": meets(value, (op, bound))}
    corral = systems.get("corral", {})
    faultless = corral.get("lost") == 0 and corral.get("recorded_twice") == 0 if corral else None
    met["corral_loses_nothing_records_nothing_twice"] = {"value": faultless, "target": "true", "met": faultless}
    return met


ROWS = (
    ("executed % of attempted", "executed_pct"),
    ("jobs lost", "lost"),
    ("jobs run more than once", "ran_twice"),
    ("outcomes recorded more than once", "recorded_twice"),
    ("enqueue p50 (ms)", "enqueue_p50_ms"),
    ("enqueue p99 (ms)", "enqueue_p99_ms"),
    ("enqueue-to-run p50 (ms)", "enqueue_to_run_p50_ms"),
    ("enqueue-to-run p99 (ms)", "enqueue_to_run_p99_ms"),
    ("  in the steady phase (ms)", "enqueue_to_run_p99_ms_steady"),
    ("API p99 before the herd (ms)", "api_p99_before_herd_ms"),
    ("API p99 during the herd (ms)", "api_p99_during_herd_ms"),
    ("  during / before", "herd_ratio"),
    ("drain (jobs/s)", "drain_jobs_per_s"),
    ("drain (jobs per CPU-second)", "drain_jobs_per_cpu_second"),
    ("store requests per job (drain)", "store_requests_per_job"),
    ("CPU ms per job (timeline)", "cpu_ms_per_job"),
    ("max R at the SLO (enqueues/s)", "max_rate_at_slo"),
)


def table(systems: Mapping[str, Mapping[str, Any]], found_ratios: Mapping[str, float | None]) -> str:
    """The systems side by side, then corral's ratios against the targets."""
    names = list(systems)
    lines = [f"{'figure':<34}" + "".join(f"{name:>12}" for name in names), "-" * (34 + 12 * len(names))]
    for label, key in ROWS:
        lines.append(f"{label:<34}" + "".join(f"{format_value(systems[name].get(key)):>12}" for name in names))
    lines += ["", f"{'ratio (corral over ...)':<44}{'value':>8}  target"]
    for name, value in found_ratios.items():
        target = TARGETS.get(name)
        lines.append(f"{name:<44}{format_value(value):>8}  {f'{target[0]} {target[1]:g}' if target else ''}")
    return "\n".join(lines)
