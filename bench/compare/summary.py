"""Several `make compare` runs side by side, as the Markdown tables docs/benchmark.md holds.

    python -m bench.compare.summary bench-results/<run>-compare-quick [more runs ...]

Each run is a results folder (or its compare.json). Every figure is given per run, `a / b / c`, in the
order given; each ratio with its target and how many runs met it; then CPU per job by process group.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.compare.figures import ROWS, TARGETS, meets
from bench.lib.report import format_value


def load(path: Path) -> dict[str, Any]:
    """A run's compare.json, from its folder or the file itself."""
    document: dict[str, Any] = json.loads((path / "compare.json" if path.is_dir() else path).read_text())
    return document


def _per_run(values: Sequence[Any]) -> str:
    return " / ".join(format_value(value) for value in values)


def figures_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """Each figure of each system, one column per system, the runs' values in order."""
    names = list(runs[0]["systems"])
    lines = ["| figure | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, key in ROWS:
        cells = [_per_run([run["systems"].get(name, {}).get(key) for run in runs]) for name in names]
        lines.append(f"| {label.strip()} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratios_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """corral's ratios over the other systems, per run, with the issue's target and the runs that met it."""
    lines = ["| ratio | runs | target | met |", "|---|---|---|---|"]
    for name in runs[0]["ratios"]:
        values = [run["ratios"].get(name) for run in runs]
        target = TARGETS.get(name)
        if target is None:
            lines.append(f"| {name} | {_per_run(values)} | | |")
            continue
        verdicts = [meets(value, target) for value in values]
        met = sum(1 for verdict in verdicts if verdict)
        lines.append(f"| {name} | {_per_run(values)} | {target[0]} {target[1]:g} | {met} of {len(runs)} |")
    return "\n".join(lines)


def cpu_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """CPU ms per job by process group, per system, the runs' values in order."""
    lines = ["| system | process group | CPU ms per job |", "|---|---|---|"]
    for name in runs[0]["systems"]:
        groups = list(dict.fromkeys(g for run in runs for g in run["systems"][name].get("cpu_ms_per_job_by_group", {})))
        for group in groups:
            values = [run["systems"][name].get("cpu_ms_per_job_by_group", {}).get(group) for run in runs]
            lines.append(f"| {name} | {group} | {_per_run(values)} |")
    return "\n".join(lines)


def summary(runs: Sequence[Mapping[str, Any]]) -> str:
    commands = sorted({run["run"]["command"] for run in runs})
    started = ", ".join(run["run"]["started_utc"] for run in runs)
    head = f"{len(runs)} runs of {' and '.join(commands)}, started {started} (values in that order)"
    return "\n\n".join([head, figures_table(runs), ratios_table(runs), cpu_table(runs)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="results folders (or their compare.json)")
    args = parser.parse_args(argv)
    missing = [str(path) for path in args.runs if not (path / "compare.json" if path.is_dir() else path).exists()]
    if missing:
        print(f"no compare.json in: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(summary([load(path) for path in args.runs]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
