"""How accurate the per-instance enqueue limit is across API instances: `python -m bench.models.rate_limit`.

Simulates N API instances in-process on a simulated clock, each with shared/tenants/rate_limit.py's own
RateLimiter, and one shared instance directory with DynamoDirectory's semantics (an instance counts
the instances that served the tenant in the last COUNTED_SECONDS). One tenant offers requests
of one job as a Poisson stream at `--offered` x its limit, each routed to an instance:
- even: any instance, uniformly (Lambda hands a request to whichever environment is free);
- skewed: instance k gets weight 1/(k+1) (a few busy environments, a long tail of idle ones).
The table's admitted rate is measured once the first burst is spent (from second 20 on), against the limit.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from dataclasses import dataclass

from shared.errors import RateLimited
from shared.tenants.rate_limit import Census, RateLimiter, census

BURST_SECONDS = 5.0  # the burst is this many seconds of the steady rate, as in the defaults (1,000/s, 5,000)
SETTLE_SECONDS = 20.0  # the first burst is spent (at 2x offered) before the admitted rate is measured


class SimClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class SharedDirectory:
    """DynamoDirectory's arithmetic, in memory: instance -> (the last second it served the tenant, its demand)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, tuple[int, float]]] = {}
        self.writes = 0

    def report(self, tenant: str, instance: str, window: int, demand: float) -> Census:
        self.writes += 1
        entries = self.entries.setdefault(tenant, {})
        entries[instance] = (window, demand)
        return census(entries.values(), window)


@dataclass(frozen=True)
class Cell:
    instances: int
    limit: float
    spread: str
    admitted_per_second: float
    refused_pct: float
    writes_per_second: float

    @property
    def ratio(self) -> float:
        return self.admitted_per_second / self.limit


def _fleet(instances: int) -> tuple[SimClock, SharedDirectory, list[RateLimiter]]:
    """`instances` API instances' limiters on one simulated clock, sharing one instance directory."""
    clock = SimClock()
    directory = SharedDirectory()
    limiters = [
        RateLimiter(directory, clock=clock, wall_clock=clock, instance_id=f"i{k}", background=False)
        for k in range(instances)
    ]
    return clock, directory, limiters


def simulate(instances: int, limit: float, spread: str, offered: float, seconds: float, seed: int = 7) -> Cell:
    rng = random.Random(seed)
    clock, directory, limiters = _fleet(instances)
    weights = [1.0] * instances if spread == "even" else [1.0 / (k + 1) for k in range(instances)]
    burst = int(limit * BURST_SECONDS)
    start = clock.now
    admitted = refused = 0
    while clock.now - start < seconds:
        clock.now += rng.expovariate(offered * limit)
        limiter = rng.choices(limiters, weights)[0]
        try:
            limiter.admit("tenant", 1, limit, burst)
        except RateLimited:
            if clock.now - start >= SETTLE_SECONDS:
                refused += 1
            continue
        if clock.now - start >= SETTLE_SECONDS:
            admitted += 1
    measured = seconds - SETTLE_SECONDS
    total = admitted + refused
    return Cell(
        instances,
        limit,
        spread,
        admitted / measured,
        100.0 * refused / total if total else 0.0,
        directory.writes / seconds,
    )


def fan_out(instances: int, limit: float, seed: int = 7) -> float:
    """Admitted in the first second by `instances` API instances that all appear at once (a flood
    scaling the API out), in bursts: the limit allows one burst plus a second of the rate."""
    rng = random.Random(seed)
    clock, _, limiters = _fleet(instances)
    burst = int(limit * BURST_SECONDS)
    start = clock.now
    admitted = 0
    while clock.now - start < 1.0:  # offered far above the limit: 10 bursts a second
        clock.now += rng.expovariate(10 * burst)
        try:
            rng.choice(limiters).admit("tenant", 1, limit, burst)
            admitted += 1
        except RateLimited:
            pass
    return admitted / burst


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.models.rate_limit", description=__doc__)
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 2, 5, 10, 50])
    parser.add_argument("--limits", type=float, nargs="+", default=[10.0, 100.0, 1000.0])
    parser.add_argument("--offered", type=float, default=2.0, help="offered load, x the limit (default 2)")
    parser.add_argument("--seconds", type=float, default=80.0, help="simulated seconds per cell")
    args = parser.parse_args(argv)
    print(f"offered {args.offered:g}x the limit, burst {BURST_SECONDS:g} s of the rate, {args.seconds:g} s simulated\n")
    print("| instances | limit (jobs/s) | spread | admitted (jobs/s) | admitted / limit | directory writes/s |")
    print("|---:|---:|---|---:|---:|---:|")
    for limit in args.limits:
        for instances in args.instances:
            for spread in ("even", "skewed") if instances > 1 else ("even",):
                cell = simulate(instances, limit, spread, args.offered, args.seconds)
                print(
                    f"| {instances} | {limit:g} | {spread} | {cell.admitted_per_second:.1f} | {cell.ratio:.2f} |"
                    f" {cell.writes_per_second:.1f} |",
                    flush=True,
                )
    print("\nA fan-out: N instances appear at once, offered 10 bursts in one second")
    print("(allowed: 1 burst + 1 s of the rate = 1.2 bursts)\n")
    print("| new instances | limit (jobs/s) | admitted in the first second (bursts) |")
    print("|---:|---:|---:|")
    for limit in args.limits:
        for instances in args.instances:
            print(f"| {instances} | {limit:g} | {fan_out(instances, limit):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
