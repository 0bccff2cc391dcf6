"""Run jobs of a concurrency-limited job type: at most two calls per partner at once.

    python -m examples.concurrency_limited

`partner_call` (examples/jobs/partner.py) declares `concurrency_key="partner"`
and `concurrency_limit=2`. Six calls to one partner run two at a time; the others wait without
using an attempt.

Output:
6 succeeded, each at its first attempt
never more than 2 at once: True
"""

from client import Corral  # with the SDK installed (pip install ./client): from corral_client import Corral


def main() -> None:
    corral = Corral.from_env()  # CORRAL_API_URL, CORRAL_API_KEY
    outcomes = corral.enqueue_many([{"type": "partner_call", "payload": {"partner": "acme-bank"}}] * 6)
    jobs = [corral.wait(outcome.id, timeout=120) for outcome in outcomes if outcome.id]
    first_attempts = sum(1 for job in jobs if job["status"] == "succeeded" and job["attempts"] == 1)
    print(f"{first_attempts} succeeded, each at its first attempt")
    edges = sorted([(job["started_at"], 1) for job in jobs] + [(job["finished_at"], -1) for job in jobs])
    running = most = 0
    for _, change in edges:
        running += change
        most = max(most, running)
    print(f"never more than 2 at once: {most <= 2}")


if __name__ == "__main__":
    main()
