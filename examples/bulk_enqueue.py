"""Enqueue many jobs at once: 100 per request, results in order, a refused job costs the others nothing.

    python -m examples.bulk_enqueue

Output:
accepted 249, refused 1
job 7 refused: jobs[7].max_attempts
the last one: succeeded
"""

from client import Corral


def main() -> None:
    corral = Corral.from_env()
    jobs = [{"type": "echo", "payload": {"n": n}} for n in range(250)]
    jobs[7]["max_attempts"] = 99  # out of range (1-25): refused, with the field at fault
    outcomes = corral.enqueue_many(jobs)
    refused = [outcome for outcome in outcomes if not outcome.ok]
    print(f"accepted {len(outcomes) - len(refused)}, refused {len(refused)}")
    for outcome in refused:
        print(f"job {outcome.index} refused: {outcome.error.field if outcome.error else '?'}")
    last = outcomes[-1].id
    assert last is not None
    print("the last one:", corral.wait(last, timeout=90)["status"])


if __name__ == "__main__":
    main()
