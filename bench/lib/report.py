"""The benchmark's outputs: slo.json, a PNG plot and a table on the terminal."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

from bench.lib.load import Sample
from bench.lib.measure import Batch, DepthSample, JobRow
from bench.lib.slo import ON_TIME_MS, TARGETS, Window, meets, percentile

# A job's dot in the enqueue-to-run plot takes the colour of what made it slow.
CAUSE_COLOURS = {
    "on time": "tab:blue",
    "kill": "tab:red",
    "blip": "tab:purple",
    "crons": "tab:orange",
    "herd": "tab:olive",
    "unexplained": "black",
}


@dataclass(frozen=True)
class Marker:
    at: float  # seconds since the load started
    name: str
    note: str
    wired: bool


@dataclass(frozen=True)
class Point:
    enqueued: float  # seconds since the load started
    wait_ms: float  # enqueue to start
    cause: str  # slo.cause_of_wait


def write_json(path: Path, results: dict[str, Any]) -> None:
    path.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")


def keep_and_print(path: Path, result: dict[str, Any]) -> None:
    """A scenario's result: written to `path` as JSON, and printed a line per figure."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, result)
    width = max(len(key) for key in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    print(f"(also in {path})")


def write_jobs_csv(path: Path, rows: dict[str, JobRow], causes: dict[str, str], start_epoch: float) -> None:
    """One line per job that ran: when it was enqueued and started (seconds since the load started), its cause."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["job_id", "enqueued_s", "started_s", "wait_ms", "attempts", "status", "cause"])
        for job_id, cause in causes.items():
            row = rows[job_id]
            assert row.enqueued_at is not None and row.started_at is not None  # causes holds started jobs only
            writer.writerow(
                [
                    job_id,
                    round(row.enqueued_at - start_epoch, 3),
                    round(row.started_at - start_epoch, 3),
                    round((row.started_at - row.enqueued_at) * 1000, 1),
                    row.attempts,
                    row.status,
                    cause,
                ]
            )


def write_requests_csv(path: Path, samples: list[Sample]) -> None:
    """One line per API enqueue the load sent: when (seconds since the load started), its latency, status, phase."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["sent_s", "latency_ms", "status", "phase"])
        for sample in sorted(samples, key=lambda s: s.at):
            writer.writerow([round(sample.at, 3), round(sample.latency_ms, 1), sample.status, sample.phase])


def write_batches_csv(path: Path, batches: list[Batch], start_epoch: float) -> None:
    """One line per worker invocation: its start (seconds since the load started), duration, size, environment."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["started_s", "busy_ms", "size", "environment", "record_ms"])
        for batch in sorted(batches, key=lambda b: b.started_at):
            started = round(batch.started_at - start_epoch, 3)
            records = " ".join(f"{ms:g}" for ms in batch.record_ms)
            writer.writerow([started, batch.busy_ms, batch.size, batch.environment, records])


def plot(
    path: Path,
    samples: list[Sample],
    enqueue_to_run: list[Point],
    depth: list[DepthSample],
    markers: list[Marker],
    windows: list[Window],
    phases: list[tuple[str, float, float]],
    title: str,
) -> None:
    """Enqueue latency, enqueue-to-run and queue depth over the run, with the phases and events marked.

    Each job's enqueue-to-run dot is coloured by the window its wait overlapped (kill, blip, crons,
    herd) when it missed the target, so a miss shows where it came from.
    """
    figure, (top, middle, bottom) = plt.subplots(3, 1, figsize=(12, 10), sharex=True)
    per_second: dict[int, list[float]] = defaultdict(list)
    for sample in samples:
        if sample.status == 202:
            per_second[int(sample.at)].append(sample.latency_ms)
    seconds = sorted(per_second)
    top.plot(seconds, [percentile(per_second[s], 50) for s in seconds], label="p50")
    top.plot(seconds, [percentile(per_second[s], 99) for s in seconds], label="p99")
    errors = [s.at for s in samples if s.status != 202]
    if errors:
        top.plot(errors, [0] * len(errors), "rx", label=f"not accepted ({len(errors)})")
    top.set_ylabel("API enqueue latency (ms)")
    top.legend(loc="upper left")
    for cause, colour in CAUSE_COLOURS.items():
        points = [p for p in enqueue_to_run if p.cause == cause]
        if points:
            label = cause if cause == "on time" else f"slow: {cause} ({len(points)})"
            middle.scatter([p.enqueued for p in points], [p.wait_ms for p in points], s=3, color=colour, label=label)
    if enqueue_to_run:
        middle.set_yscale("log")
    middle.axhline(ON_TIME_MS, color="red", linestyle=":", label=f"p99 target {ON_TIME_MS:g} ms")
    middle.set_ylabel("enqueue-to-run (ms), per job")
    middle.legend(loc="upper left")
    bottom.plot([d.at for d in depth], [d.visible for d in depth], label="visible (waiting)")
    bottom.plot([d.at for d in depth], [d.in_flight for d in depth], label="in flight")
    bottom.set_ylabel("queue depth (messages)")
    bottom.set_xlabel("seconds since the load started")
    bottom.legend(loc="upper left")
    for axis in (top, middle, bottom):
        for name, start, end in phases:
            if name == "herd":
                axis.axvspan(start, end, color="orange", alpha=0.12)
        for marker in markers:
            axis.axvline(marker.at, color="black" if marker.wired else "grey", linestyle="--", linewidth=1)
        for window in windows:
            if window.cause in ("kill", "blip", "crons"):
                axis.axvspan(window.start, window.end, color=CAUSE_COLOURS[window.cause], alpha=0.1)
    for marker in markers:
        label = marker.name if marker.wired else f"{marker.name} (not wired)"
        top.annotate(label, (marker.at, 1.0), xycoords=("data", "axes fraction"), rotation=90, va="top", fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def format_value(value: Any) -> str:
    """A figure for a text table: `-` for none, one decimal from 10 up, two below."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)


def table(rows: list[tuple[str, Any, str]]) -> str:
    """(figure, value, target key or text) -> an aligned text table with a pass/fail column."""
    lines = [f"{'figure':<34} {'value':>14}  {'target':<12} ok", "-" * 66]
    for name, value, key in rows:
        target = f"{TARGETS[key][0]} {TARGETS[key][1]:g}" if key in TARGETS else key
        verdict = {True: "yes", False: "NO", None: ""}[meets(key, value if isinstance(value, int | float) else None)]
        lines.append(f"{name:<34} {format_value(value):>14}  {target:<12} {verdict}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Panel:
    """One system's timeline in `plot_systems`: its jobs' waits, its events and its fault windows."""

    name: str
    enqueue_to_run: list[Point]
    markers: list[Marker]
    windows: list[Window]


def plot_systems(path: Path, panels: list[Panel], phases: list[tuple[str, float, float]], title: str) -> None:
    """Enqueue-to-run over the timeline, one row per system on shared axes (`make compare`): each job a
    dot coloured by what made it slow, the herd shaded, the events marked."""
    figure, axes = plt.subplots(len(panels), 1, figsize=(12, 3.2 * len(panels)), sharex=True, sharey=True)
    for axis, panel in zip(axes if len(panels) > 1 else [axes], panels, strict=True):
        for cause, colour in CAUSE_COLOURS.items():
            points = [p for p in panel.enqueue_to_run if p.cause == cause]
            if points:
                label = cause if cause == "on time" else f"slow: {cause} ({len(points)})"
                axis.scatter([p.enqueued for p in points], [p.wait_ms for p in points], s=3, color=colour, label=label)
        axis.set_yscale("log")
        axis.axhline(ON_TIME_MS, color="red", linestyle=":", label=f"{ON_TIME_MS:g} ms")
        axis.set_ylabel(f"{panel.name}\nenqueue-to-run (ms)")
        axis.legend(loc="upper left", fontsize=7)
        for name, start, end in phases:
            if name == "herd":
                axis.axvspan(start, end, color="orange", alpha=0.12)
        for marker in panel.markers:
            axis.axvline(marker.at, color="black" if marker.wired else "grey", linestyle="--", linewidth=1)
            axis.annotate(marker.name, (marker.at, 1.0), xycoords=("data", "axes fraction"), va="top", fontsize=7)
        for window in panel.windows:
            if window.cause in ("kill", "blip", "crons"):
                axis.axvspan(window.start, window.end, color=CAUSE_COLOURS[window.cause], alpha=0.1)
    (axes[-1] if len(panels) > 1 else axes).set_xlabel("seconds since the load started")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
